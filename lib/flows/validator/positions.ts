/**
 * Where a JSON pointer sits in the source text: line and column (1-based) of the value's first and
 * last character. Runs only when there are findings to place, in one pass over the text, and
 * records only the pointers asked for and their ancestors (a finding about a missing property is
 * placed on the nearest value that exists).
 */

export interface Span {
  line_start: number;
  line_end: number;
  column_start: number;
  column_end: number;
}

export function escapePointer(seg: string | number): string {
  return String(seg).replace(/~/g, '~0').replace(/\//g, '~1');
}

export function pointerOf(path: readonly (string | number)[]): string {
  return path.length === 0 ? '' : '/' + path.map(escapePointer).join('/');
}

class Scanner {
  i = 0;
  constructor(
    readonly text: string,
    readonly wanted: Set<string>,
    readonly found: Map<string, [number, number]>,
  ) {}

  ws(): void {
    const t = this.text;
    while (this.i < t.length) {
      const c = t.charCodeAt(this.i);
      if (c === 32 || c === 10 || c === 13 || c === 9) this.i++;
      else break;
    }
  }

  /** Reads a string token (the cursor is on its opening quote); jumps from quote to quote. */
  string(): string {
    const t = this.text;
    const start = this.i + 1;
    let from = start;
    let end = t.length;
    for (;;) {
      const q = t.indexOf('"', from);
      if (q < 0) break;
      let slashes = 0;
      for (let b = q - 1; b >= start && t.charCodeAt(b) === 92; b--) slashes++;
      if (slashes % 2 === 0) {
        end = q;
        break;
      }
      from = q + 1;
    }
    const raw = t.slice(start, end);
    this.i = end + 1;
    if (!raw.includes('\\')) return raw;
    try {
      return JSON.parse(`"${raw}"`) as string;
    } catch {
      return raw;
    }
  }

  /**
   * Reads an object's or an array's members (the cursor is past its opening bracket) through its
   * closing one; `member` reads the n-th, and false stops where the text is not a member.
   */
  members(close: '}' | ']', member: (n: number) => boolean): void {
    const t = this.text;
    this.ws();
    if (t[this.i] === close) {
      this.i++;
      return;
    }
    for (let n = 0; member(n); n++) {
      this.ws();
      if (t[this.i] !== ',') {
        this.i++; // the closing bracket
        return;
      }
      this.i++;
    }
  }

  value(ptr: string): void {
    this.ws();
    const start = this.i;
    const t = this.text;
    const c = t[this.i];
    const track = this.wanted.has(ptr);
    if (c === '{') {
      this.i++;
      this.members('}', () => {
        this.ws();
        if (t[this.i] !== '"') return false;
        const key = this.string();
        this.ws();
        this.i++; // ':'
        this.value(`${ptr}/${escapePointer(key)}`);
        return true;
      });
    } else if (c === '[') {
      this.i++;
      this.members(']', (n) => {
        this.value(`${ptr}/${n}`);
        return true;
      });
    } else if (c === '"') {
      this.string();
    } else {
      while (this.i < t.length && !/[\s,\]}]/.test(t[this.i])) this.i++;
    }
    if (track) this.found.set(ptr, [start, Math.max(start, this.i - 1)]);
  }
}

/** Positions of `pointers` (or of their nearest existing ancestor) in `text`, valid JSON. */
export function locate(text: string, pointers: Iterable<string>): Map<string, Span> {
  const asked = [...new Set(pointers)];
  const wanted = new Set<string>();
  for (const p of asked) {
    let q = p;
    for (;;) {
      wanted.add(q);
      if (q === '') break;
      q = q.slice(0, q.lastIndexOf('/'));
    }
  }
  const found = new Map<string, [number, number]>();
  new Scanner(text, wanted, found).value('');
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) lineStarts.push(i + 1);
  const at = (offset: number): [number, number] => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return [lo + 1, offset - lineStarts[lo] + 1];
  };
  const out = new Map<string, Span>();
  for (const p of asked) {
    let q = p;
    while (!found.has(q) && q !== '') q = q.slice(0, q.lastIndexOf('/'));
    const range = found.get(q) ?? [0, 0];
    const [ls, cs] = at(range[0]);
    const [le, ce] = at(range[1]);
    out.set(p, { line_start: ls, line_end: le, column_start: cs, column_end: ce });
  }
  return out;
}

/** Line and column of a character offset (for JSON syntax errors). */
export function positionOfOffset(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let last = -1;
  const end = Math.min(offset, text.length);
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      last = i;
    }
  }
  return { line, column: end - last };
}

/**
 * Offset of the first JSON syntax error in `text` (JSON.parse's messages carry no position on
 * every Node version). Runs only on text JSON.parse refused.
 */
export function syntaxErrorOffset(text: string): number {
  let i = 0;
  const fail = (): never => {
    throw i;
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++;
  };
  const lit = (w: string) => {
    if (text.startsWith(w, i)) i += w.length;
    else fail();
  };
  const str = () => {
    i++;
    while (i < text.length && text[i] !== '"') {
      const c = text.charCodeAt(i);
      if (c < 0x20) fail();
      if (text[i] === '\\') {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail();
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else fail();
      } else i++;
    }
    if (i >= text.length) fail();
    i++;
  };
  const num = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m || m[0] === '' || m[0] === '-') fail();
    i += m![0].length;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        str();
        ws();
        if (text[i] !== ':') fail();
        i++;
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return void i++;
        else fail();
      }
    } else if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') return void i++;
      for (;;) {
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return void i++;
        else fail();
      }
    } else if (c === '"') str();
    else if (c === 't') lit('true');
    else if (c === 'f') lit('false');
    else if (c === 'n') lit('null');
    else if (c === '-' || (c >= '0' && c <= '9')) num();
    else fail();
  };
  try {
    value();
    ws();
    if (i < text.length) fail();
    return text.length;
  } catch (e) {
    if (typeof e === 'number') return e;
    throw e;
  }
}
