/**
 * Reads positions back through a source map (version 3): a line and column of the bundle become
 * the source file, line and column the user wrote, so start-up errors point into their code.
 */
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64_INDEX = new Map([...B64].map((c, i) => [c, i]));

interface Segment {
  col: number;
  src: number;
  line: number;
  srcCol: number;
}

export interface SourceMap {
  sources: string[];
  mappings: string;
}

function decodeVlq(text: string): number[] {
  const out: number[] = [];
  let value = 0;
  let shift = 0;
  for (const ch of text) {
    const digit = B64_INDEX.get(ch);
    if (digit === undefined) break;
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
    } else {
      out.push(value & 1 ? -(value >>> 1) : value >>> 1);
      value = 0;
      shift = 0;
    }
  }
  return out;
}

export class PositionMapper {
  private readonly lines: Segment[][] = [];

  constructor(private readonly map: SourceMap) {
    let src = 0;
    let line = 0;
    let srcCol = 0;
    for (const text of map.mappings.split(';')) {
      const segs: Segment[] = [];
      let col = 0;
      for (const part of text.split(',')) {
        if (!part) continue;
        const f = decodeVlq(part);
        col += f[0];
        if (f.length >= 4) {
          src += f[1];
          line += f[2];
          srcCol += f[3];
          segs.push({ col, src, line, srcCol });
        }
      }
      this.lines.push(segs);
    }
  }

  /** 1-based line and column in the bundle → the source position (1-based), if mapped. */
  original(line: number, column: number): { file: string; line: number; column: number } | undefined {
    const segs = this.lines[line - 1];
    if (!segs || segs.length === 0) return undefined;
    let best: Segment | undefined;
    for (const s of segs) {
      if (s.col <= column - 1) best = s;
      else break;
    }
    best ??= segs[0];
    const file = this.map.sources[best.src];
    if (file === undefined) return undefined;
    return { file, line: best.line + 1, column: best.srcCol + 1 };
  }
}
