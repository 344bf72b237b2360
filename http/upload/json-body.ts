/**
 * Reads a JSON upload body (`{ …, "data": "<base64>" }`) as a stream, so a 5 MB file never sits
 * in memory three times (raw body, JSON text, decoded bytes): the top-level `data` string is
 * base64-decoded on the fly into a temporary file, every other member is parsed as usual.
 *
 * Policy:
 * - The body is one JSON object of at most `bodyLimit` bytes (413 `payload_too_large` beyond);
 *   malformed JSON is 400 `invalid_json`, like express.json.
 * - `data` is standard base64 (A–Z a–z 0–9 + /, `=` padding only at the end, at most two), with
 *   optional whitespace; a `data:<type>;base64,` URI prefix is stripped. Anything else is 400
 *   `invalid_request` (field `data`). A `data` member given twice is refused too.
 * - Decoded bytes go to the sink, whose limit (inline ceiling, remaining budget) aborts early.
 * - The returned body carries a short placeholder in place of `data` (empty stays empty, so the
 *   contract's minLength still applies); the bytes are in the returned file.
 */
import type { Readable } from 'node:stream';
import { ApiError } from '../../lib/platform/errors.js';
import type { TempFileSink } from '../../lib/media/temp-file.js';

const Q = 0x22;
const BS = 0x5c;

const enum S {
  Start,
  FirstKeyOrEnd,
  Key,
  Colon,
  Value,
  Generic,
  Data,
  AfterValue,
  NextKey,
  Done,
}

function invalidJson(): ApiError {
  return new ApiError('invalid_json', 'Request body is not valid JSON.');
}

export function notBase64(why: string): ApiError {
  const message = `data is not valid base64: ${why}.`;
  return new ApiError('invalid_request', message, { fields: [{ field: 'data', message }] });
}

const isWs = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** Byte → base64 value; -2 for `=`, -3 for whitespace, -1 for anything else. */
const B64 = (() => {
  const m = new Int8Array(256).fill(-1);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (let i = 0; i < 64; i++) m[alphabet.charCodeAt(i)] = i;
  m[0x3d] = -2;
  for (const c of [0x20, 0x09, 0x0a, 0x0d]) m[c] = -3;
  return m;
})();

const MAX_PREFIX = 512;

/**
 * Incremental strict base64 decoder working on bytes (no strings, so decoding a 5 MB file makes
 * no garbage beyond one reused output buffer), with `data:` URI prefix stripping.
 */
export class Base64Stream {
  private prefix: Buffer | null = Buffer.alloc(0);
  private acc = 0;
  private n = 0;
  private pad = 0;
  private out = Buffer.alloc(0);

  /** Decodes the next piece; the returned view is only valid until the next call. */
  feed(input: Buffer): Buffer | null {
    let src = input;
    if (this.prefix !== null) {
      const p = Buffer.concat([this.prefix, input]);
      const head = p.subarray(0, 5).toString('latin1').toLowerCase();
      if (p.length < 5 && 'data:'.startsWith(head)) {
        this.prefix = p;
        return null;
      }
      if (head === 'data:') {
        const comma = p.indexOf(0x2c);
        if (comma < 0 || comma > MAX_PREFIX) {
          if (comma > MAX_PREFIX || p.length > MAX_PREFIX) throw notBase64('a data: URI prefix without a comma');
          this.prefix = p;
          return null;
        }
        if (!/;base64$/i.test(p.subarray(5, comma).toString('latin1'))) throw notBase64('the data: URI is not ;base64');
        src = p.subarray(comma + 1);
      } else {
        src = p;
      }
      this.prefix = null;
    }
    return this.decode(src);
  }

  private decode(src: Buffer): Buffer | null {
    const need = Math.floor((this.n + src.length) / 4) * 3;
    if (this.out.length < need) this.out = Buffer.allocUnsafe(Math.max(need, 48 * 1024));
    const out = this.out;
    let o = 0;
    let acc = this.acc;
    let n = this.n;
    for (let i = 0; i < src.length; i++) {
      const v = B64[src[i]];
      if (v >= 0) {
        if (this.pad > 0) throw notBase64('characters after the padding');
        acc = (acc << 6) | v;
        if (++n === 4) {
          out[o++] = (acc >> 16) & 0xff;
          out[o++] = (acc >> 8) & 0xff;
          out[o++] = acc & 0xff;
          acc = 0;
          n = 0;
        }
      } else if (v === -2) {
        if (++this.pad > 2) throw notBase64('too much padding');
      } else if (v !== -3) {
        throw notBase64(src[i] >= 0x80 ? 'a non-ASCII character' : 'characters outside the base64 alphabet');
      }
    }
    this.acc = acc;
    this.n = n;
    return o > 0 ? out.subarray(0, o) : null;
  }

  /** The last bytes (a group of 2 or 3 characters, padded or not); throws when the text ends badly. */
  end(): Buffer | null {
    let head: Buffer | null = null;
    if (this.prefix !== null) {
      const rest = this.prefix;
      this.prefix = null;
      if (rest.subarray(0, 5).toString('latin1').toLowerCase() === 'data:') throw notBase64('a data: URI prefix without a comma');
      const d = this.decode(rest);
      head = d ? Buffer.from(d) : null;
    }
    const { n, pad, acc } = this;
    let tail: Buffer | null = null;
    if (n === 0 && pad === 0) tail = null;
    else if (n === 2 && (pad === 0 || pad === 2)) tail = Buffer.from([(acc >> 4) & 0xff]);
    else if (n === 3 && (pad === 0 || pad === 1)) tail = Buffer.from([(acc >> 10) & 0xff, (acc >> 2) & 0xff]);
    else if (n === 1) throw notBase64('a truncated last group');
    else throw notBase64('padding in the wrong place');
    this.n = 0;
    this.acc = 0;
    return head && tail ? Buffer.concat([head, tail]) : (head ?? tail);
  }
}

export interface JsonUpload {
  body: unknown;
  /** The decoded `data`, when the body had a `data` string. */
  file?: TempFileSink;
}

type UploadOptions = {
  bodyLimit: number;
  bodyLimitCode?: 'payload_too_large' | 'file_too_large';
  openSink: () => Promise<TempFileSink>;
  onSink: (sink: TempFileSink) => void;
};

/**
 * Parses `source` (the request). `openSink` is called when a `data` string starts. On error the
 * sink is left to the caller (returned through `onSink` so it can be removed).
 */
export async function readJsonUpload(source: Readable, opts: UploadOptions): Promise<JsonUpload> {
  const parser = new UploadParser(opts);
  const iterable = (source as Readable & { iterator?: (o: { destroyOnReturn: boolean }) => AsyncIterable<Buffer> }).iterator
    ? (source as any).iterator({ destroyOnReturn: false })
    : source;
  let total = 0;
  for await (const raw of iterable as AsyncIterable<Buffer>) {
    const chunk = Buffer.isBuffer(raw) ? raw : Buffer.from(raw);
    total += chunk.length;
    if (total > opts.bodyLimit) {
      throw new ApiError(opts.bodyLimitCode ?? 'payload_too_large', `Request body exceeds ${opts.bodyLimit} bytes.`, { limit: opts.bodyLimit });
    }
    await parser.feed(chunk);
  }
  return parser.end();
}

/** The streaming parser's state between chunks: one method per state, each answering where it stopped. */
class UploadParser {
  private readonly members = new Map<string, unknown>();
  private state = S.Start;
  private esc = false;
  private key = '';
  private keyParts: Buffer[] = [];
  private keyLen = 0;
  // Generic value capture.
  private gParts: Buffer[] = [];
  private gDepth = 0;
  private gInStr = false;
  private gStarted = false;
  // The data string.
  private sink: TempFileSink | undefined;
  private decoder: Base64Stream | undefined;
  private dataChars = 0;
  private uEscape: string | null = null;

  constructor(private readonly opts: UploadOptions) {}

  async feed(chunk: Buffer): Promise<void> {
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      switch (this.state) {
        case S.Key:
          i = this.readKey(chunk, i);
          break;
        case S.Value:
          i = await this.startValue(chunk, i);
          break;
        case S.Generic:
          i = this.readGeneric(chunk, i);
          break;
        case S.Data:
          i = await this.readData(chunk, i);
          break;
        default:
          i = this.readStructure(chunk, i);
      }
    }
  }

  end(): JsonUpload {
    if (this.state !== S.Done) throw invalidJson();
    // Object.fromEntries makes every key an own property ("__proto__" included), like JSON.parse.
    return { body: Object.fromEntries(this.members), file: this.sink };
  }

  /** Braces, commas and colons between members. */
  private readStructure(chunk: Buffer, i: number): number {
    const n = chunk.length;
    while (i < n && isWs(chunk[i])) i++;
    if (i >= n) return i;
    const c = chunk[i++];
    const state = this.state;
    if (state === S.Start && c === 0x7b) this.state = S.FirstKeyOrEnd;
    else if ((state === S.FirstKeyOrEnd || state === S.NextKey) && c === Q) {
      this.state = S.Key;
      this.keyParts = [];
      this.keyLen = 0;
      this.esc = false;
    } else if (state === S.FirstKeyOrEnd && c === 0x7d) this.state = S.Done;
    else if (state === S.Colon && c === 0x3a) this.state = S.Value;
    else if (state === S.AfterValue && c === 0x2c) this.state = S.NextKey;
    else if (state === S.AfterValue && c === 0x7d) this.state = S.Done;
    else throw invalidJson();
    return i;
  }

  private readKey(chunk: Buffer, i: number): number {
    const n = chunk.length;
    const start = i;
    let end = -1;
    for (; i < n; i++) {
      const c = chunk[i];
      if (this.esc) this.esc = false;
      else if (c === BS) this.esc = true;
      else if (c === Q) {
        end = i;
        break;
      }
    }
    const part = chunk.subarray(start, end < 0 ? n : end);
    this.keyLen += part.length;
    if (this.keyLen > 1024) throw invalidJson();
    this.keyParts.push(Buffer.from(part));
    if (end < 0) return n;
    try {
      this.key = JSON.parse(`"${Buffer.concat(this.keyParts).toString('utf8')}"`);
    } catch {
      throw invalidJson();
    }
    this.state = S.Colon;
    return end + 1;
  }

  /** A member's value starts: the top-level `data` string is decoded into the sink, anything else captured. */
  private async startValue(chunk: Buffer, i: number): Promise<number> {
    const n = chunk.length;
    while (i < n && isWs(chunk[i])) i++;
    if (i >= n) return i;
    this.esc = false;
    if (this.key === 'data' && chunk[i] === Q) {
      if (this.decoder) {
        const message = 'data is given twice.';
        throw new ApiError('invalid_request', message, { fields: [{ field: 'data', message }] });
      }
      this.decoder = new Base64Stream();
      this.sink = await this.opts.openSink();
      this.opts.onSink(this.sink);
      this.state = S.Data;
      return i + 1;
    }
    this.gParts = [];
    this.gDepth = 0;
    this.gInStr = false;
    this.gStarted = false;
    this.state = S.Generic;
    return i;
  }

  /** Any other value, captured up to its end and parsed with JSON.parse. */
  private readGeneric(chunk: Buffer, i: number): number {
    const n = chunk.length;
    const start = i;
    let endAt = -1; // exclusive end of the value in this chunk
    for (; i < n; i++) {
      const c = chunk[i];
      if (this.gInStr) {
        if (this.esc) this.esc = false;
        else if (c === BS) this.esc = true;
        else if (c === Q) {
          this.gInStr = false;
          if (this.gDepth === 0) {
            endAt = i + 1;
            break;
          }
        }
        continue;
      }
      if (c === 0x7b || c === 0x5b) {
        this.gDepth++;
        this.gStarted = true;
      } else if (c === 0x7d || c === 0x5d) {
        if (this.gDepth === 0) {
          endAt = i; // a primitive ended at the object's close
          break;
        }
        this.gDepth--;
        if (this.gDepth === 0) {
          endAt = i + 1;
          break;
        }
      } else if (c === Q) {
        this.gInStr = true;
        this.gStarted = true;
      } else if (this.gDepth === 0 && (isWs(c) || c === 0x2c)) {
        endAt = i;
        break;
      } else this.gStarted = true;
    }
    this.gParts.push(Buffer.from(chunk.subarray(start, endAt < 0 ? n : endAt)));
    if (endAt < 0) return n;
    if (!this.gStarted) throw invalidJson();
    try {
      this.members.set(this.key, JSON.parse(Buffer.concat(this.gParts).toString('utf8')));
    } catch {
      throw invalidJson();
    }
    this.gParts = [];
    this.state = S.AfterValue;
    return endAt;
  }

  private async feedData(bytes: Buffer): Promise<void> {
    const out = this.decoder!.feed(bytes);
    if (out) await this.sink!.write(out);
  }

  /** The `data` string: base64 runs go to the decoder; JSON escapes are resolved on the way. */
  private async readData(chunk: Buffer, i: number): Promise<number> {
    const n = chunk.length;
    // \uXXXX escapes (e.g. \u002F) may span chunks.
    if (this.uEscape !== null) {
      while (i < n && this.uEscape.length < 4) this.uEscape += String.fromCharCode(chunk[i++]);
      if (this.uEscape.length < 4) return i;
      if (!/^[0-9a-fA-F]{4}$/.test(this.uEscape)) throw invalidJson();
      const code = parseInt(this.uEscape, 16);
      this.uEscape = null;
      if (code >= 0x80) throw notBase64('a non-ASCII character');
      this.dataChars++;
      await this.feedData(Buffer.from([code]));
      return i;
    }
    if (this.esc) {
      this.esc = false;
      const c = chunk[i++];
      if (c === 0x2f) {
        this.dataChars++;
        await this.feedData(Buffer.from('/'));
      } else if (c === 0x6e || c === 0x72 || c === 0x74) {
        /* \n \r \t: whitespace, skipped */
      } else if (c === 0x75) this.uEscape = '';
      else if (c === Q || c === BS || c === 0x62 || c === 0x66) throw notBase64('characters outside the base64 alphabet');
      else throw invalidJson();
      return i;
    }
    // The run up to the next quote or backslash (native scans); the decoder checks every byte.
    const q = chunk.indexOf(Q, i);
    const b = chunk.indexOf(BS, i);
    const j = q < 0 ? (b < 0 ? n : b) : b < 0 ? q : Math.min(q, b);
    if (j > i) {
      this.dataChars += j - i;
      await this.feedData(chunk.subarray(i, j));
    }
    i = j;
    if (i >= n) return i;
    if (chunk[i] === BS) {
      this.esc = true;
      return i + 1;
    }
    // The closing quote.
    const tail = this.decoder!.end();
    if (tail) await this.sink!.write(tail);
    this.members.set('data', this.dataChars === 0 ? '' : `[${this.dataChars} base64 characters, decoded to ${this.sink!.size} bytes]`);
    this.state = S.AfterValue;
    return i + 1;
  }
}
