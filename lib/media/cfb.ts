/**
 * Old Office documents (.doc, .xls, .ppt) are Compound File Binary (CFB) containers: file-type only
 * says "application/x-cfb". Policy: a CFB file is Word, Excel or PowerPoint only when its root
 * storage holds that application's main stream (`WordDocument`; `Workbook` or `Book`;
 * `PowerPoint Document`); any other CFB (an MSI installer, an Outlook message, a broken file) is
 * not an accepted document. Only the header, the FAT sectors on the directory's chain and the
 * directory itself are read (random access), with bounds on every loop, so a hostile file cannot
 * make us read more than a few hundred kilobytes or spin.
 */
import { DOC, PPT, XLS } from './types.js';

export type ReadAt = (position: number, length: number) => Promise<Buffer>;

const SIGNATURE = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
const ENDOFCHAIN = 0xfffffffe;
const NOSTREAM = 0xffffffff;
const MAX_DIRECTORY_SECTORS = 1024;
const MAX_ENTRIES = 65536;

interface Entry {
  name: string;
  type: number;
  left: number;
  right: number;
  child: number;
}

/** Names of the root storage's direct children, or undefined when the file is not a readable CFB. */
export async function cfbRootNames(readAt: ReadAt, size: number): Promise<string[] | undefined> {
  if (size < 512) return undefined;
  const header = await readAt(0, 512);
  if (header.length < 512 || !header.subarray(0, 8).equals(SIGNATURE)) return undefined;
  const shift = header.readUInt16LE(0x1e);
  if (shift !== 9 && shift !== 12) return undefined;
  const sectorSize = 1 << shift;
  const perSector = sectorSize / 4;
  const firstDirSector = header.readUInt32LE(0x30);
  const firstDifat = header.readUInt32LE(0x44);
  const sectorCount = Math.floor(size / sectorSize) - 1;
  const valid = (s: number) => s >= 0 && s < sectorCount;
  const sectorAt = async (s: number, offset = 0, length = sectorSize) => {
    if (!valid(s)) throw new Error('sector out of range');
    const buf = await readAt((s + 1) * sectorSize + offset, length);
    if (buf.length < length) throw new Error('short read');
    return buf;
  };

  const difatCache = new Map<number, Buffer>();
  async function fatSectorOf(index: number): Promise<number> {
    if (index < 109) return header.readUInt32LE(0x4c + index * 4);
    let j = index - 109;
    let loc = firstDifat;
    for (let hops = 0; ; hops++) {
      if (hops > 4096 || !valid(loc)) throw new Error('bad DIFAT chain');
      let sector = difatCache.get(loc);
      if (!sector) difatCache.set(loc, (sector = await sectorAt(loc)));
      if (j < perSector - 1) return sector.readUInt32LE(j * 4);
      j -= perSector - 1;
      loc = sector.readUInt32LE((perSector - 1) * 4);
    }
  }
  async function next(s: number): Promise<number> {
    const fatSector = await fatSectorOf(Math.floor(s / perSector));
    return (await sectorAt(fatSector, (s % perSector) * 4, 4)).readUInt32LE(0);
  }

  try {
    const entries: Entry[] = [];
    const seen = new Set<number>();
    for (let s = firstDirSector; s !== ENDOFCHAIN; s = await next(s)) {
      if (seen.has(s) || seen.size >= MAX_DIRECTORY_SECTORS) return undefined;
      seen.add(s);
      const sector = await sectorAt(s);
      for (let off = 0; off + 128 <= sector.length && entries.length < MAX_ENTRIES; off += 128) {
        const e = sector.subarray(off, off + 128);
        const nameBytes = Math.min(e.readUInt16LE(0x40), 64);
        entries.push({
          name: e.subarray(0, Math.max(0, nameBytes - 2)).toString('utf16le'),
          type: e[0x42],
          left: e.readUInt32LE(0x44),
          right: e.readUInt32LE(0x48),
          child: e.readUInt32LE(0x4c),
        });
      }
    }
    const root = entries[0];
    if (!root || root.type !== 5) return undefined;
    // The root's children form a tree through left/right siblings; storages are not descended into.
    const names: string[] = [];
    const stack = [root.child];
    const visited = new Set<number>();
    while (stack.length) {
      const id = stack.pop()!;
      if (id === NOSTREAM || id >= entries.length || visited.has(id)) continue;
      visited.add(id);
      const e = entries[id];
      if (e.type === 1 || e.type === 2) names.push(e.name);
      stack.push(e.left, e.right);
    }
    return names;
  } catch {
    return undefined;
  }
}

/** The Office type of a CFB file by its root streams, or undefined. */
export function officeTypeOf(names: string[]): string | undefined {
  const has = (n: string) => names.includes(n);
  if (has('WordDocument')) return DOC;
  if (has('Workbook') || has('Book')) return XLS;
  if (has('PowerPoint Document')) return PPT;
  return undefined;
}
