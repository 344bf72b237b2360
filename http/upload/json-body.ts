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

/**
 * Parses `source` (the request). `openSink` is called when a `data` string starts. On error the
 * sink is left to the caller (returned through `onSink` so it can be removed).
 */
export async function readJsonUpload(
  source: Readable,
  opts: { bodyLimit: number; bodyLimitCode?: 'payload_too_large' | 'file_too_large'; openSink: () => Promise<TempFileSink>; onSink: (sink: TempFileSink) => void },
): Promise<JsonUpload> {
  const members = new Map<string, unknown>();
  let state = S.Start;
  let keyParts: Buffer[] = [];
  let keyLen = 0;
  let esc = false;
  let key = '';
  // Generic value capture.
  let gParts: Buffer[] = [];
  let gDepth = 0;
  let gInStr = false;
  let gStarted = false;
  // The data string.
  let sink: TempFileSink | undefined;
  let decoder: Base64Stream | undefined;
  let dataChars = 0;
  let uEscape: string | null = null;
  let total = 0;

  const finishGeneric = () => {
    try {
      members.set(key, JSON.parse(Buffer.concat(gParts).toString('utf8')));
    } catch {
      throw invalidJson();
    }
    gParts = [];
    state = S.AfterValue;
  };

  const feedData = async (bytes: Buffer) => {
    const out = decoder!.feed(bytes);
    if (out) await sink!.write(out);
  };

  const iterable = (source as Readable & { iterator?: (o: { destroyOnReturn: boolean }) => AsyncIterable<Buffer> }).iterator
    ? (source as any).iterator({ destroyOnReturn: false })
    : source;
  for await (const raw of iterable as AsyncIterable<Buffer>) {
    const chunk = Buffer.isBuffer(raw) ? raw : Buffer.from(raw);
    total += chunk.length;
    if (total > opts.bodyLimit) {
      throw new ApiError(opts.bodyLimitCode ?? 'payload_too_large', `Request body exceeds ${opts.bodyLimit} bytes.`, { limit: opts.bodyLimit });
    }
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      switch (state) {
        case S.Start:
        case S.FirstKeyOrEnd:
        case S.NextKey:
        case S.Colon:
        case S.AfterValue:
        case S.Done: {
          while (i < n && isWs(chunk[i])) i++;
          if (i >= n) break;
          const c = chunk[i++];
          if (state === S.Start && c === 0x7b) state = S.FirstKeyOrEnd;
          else if ((state === S.FirstKeyOrEnd || state === S.NextKey) && c === Q) {
            state = S.Key;
            keyParts = [];
            keyLen = 0;
            esc = false;
          } else if (state === S.FirstKeyOrEnd && c === 0x7d) state = S.Done;
          else if (state === S.Colon && c === 0x3a) state = S.Value;
          else if (state === S.AfterValue && c === 0x2c) state = S.NextKey;
          else if (state === S.AfterValue && c === 0x7d) state = S.Done;
          else throw invalidJson();
          break;
        }
        case S.Key: {
          const start = i;
          let end = -1;
          for (; i < n; i++) {
            const c = chunk[i];
            if (esc) esc = false;
            else if (c === BS) esc = true;
            else if (c === Q) {
              end = i;
              break;
            }
          }
          const part = chunk.subarray(start, end < 0 ? n : end);
          keyLen += part.length;
          if (keyLen > 1024) throw invalidJson();
          keyParts.push(Buffer.from(part));
          if (end >= 0) {
            i = end + 1;
            try {
              key = JSON.parse(`"${Buffer.concat(keyParts).toString('utf8')}"`);
            } catch {
              throw invalidJson();
            }
            state = S.Colon;
          }
          break;
        }
        case S.Value: {
          while (i < n && isWs(chunk[i])) i++;
          if (i >= n) break;
          if (key === 'data' && chunk[i] === Q) {
            if (decoder) {
              const message = 'data is given twice.';
              throw new ApiError('invalid_request', message, { fields: [{ field: 'data', message }] });
            }
            i++;
            decoder = new Base64Stream();
            sink = await opts.openSink();
            opts.onSink(sink);
            esc = false;
            state = S.Data;
          } else {
            gParts = [];
            gDepth = 0;
            gInStr = false;
            gStarted = false;
            esc = false;
            state = S.Generic;
          }
          break;
        }
        case S.Generic: {
          const start = i;
          let endAt = -1; // exclusive end of the value in this chunk
          for (; i < n; i++) {
            const c = chunk[i];
            if (gInStr) {
              if (esc) esc = false;
              else if (c === BS) esc = true;
              else if (c === Q) {
                gInStr = false;
                if (gDepth === 0) {
                  endAt = i + 1;
                  break;
                }
              }
              continue;
            }
            if (c === 0x7b || c === 0x5b) {
              gDepth++;
              gStarted = true;
            } else if (c === 0x7d || c === 0x5d) {
              if (gDepth === 0) {
                endAt = i; // a primitive ended at the object's close
                break;
              }
              gDepth--;
              if (gDepth === 0) {
                endAt = i + 1;
                break;
              }
            } else if (c === Q) {
              gInStr = true;
              gStarted = true;
            } else if (gDepth === 0 && (isWs(c) || c === 0x2c)) {
              endAt = i;
              break;
            } else gStarted = true;
          }
          gParts.push(Buffer.from(chunk.subarray(start, endAt < 0 ? n : endAt)));
          if (endAt >= 0) {
            i = endAt;
            if (!gStarted) throw invalidJson();
            finishGeneric();
          }
          break;
        }
        case S.Data: {
          // \uXXXX escapes (e.g. \u002F) may span chunks.
          if (uEscape !== null) {
            while (i < n && uEscape.length < 4) uEscape += String.fromCharCode(chunk[i++]);
            if (uEscape.length < 4) break;
            if (!/^[0-9a-fA-F]{4}$/.test(uEscape)) throw invalidJson();
            const code = parseInt(uEscape, 16);
            uEscape = null;
            if (code >= 0x80) throw notBase64('a non-ASCII character');
            dataChars++;
            await feedData(Buffer.from([code]));
            break;
          }
          if (esc) {
            esc = false;
            const c = chunk[i++];
            if (c === 0x2f) {
              dataChars++;
              await feedData(Buffer.from('/'));
            } else if (c === 0x6e || c === 0x72 || c === 0x74) {
              /* \n \r \t: whitespace, skipped */
            } else if (c === 0x75) uEscape = '';
            else if (c === Q || c === BS || c === 0x62 || c === 0x66) throw notBase64('characters outside the base64 alphabet');
            else throw invalidJson();
            break;
          }
          // The run up to the next quote or backslash (native scans); the decoder checks every byte.
          const q = chunk.indexOf(Q, i);
          const b = chunk.indexOf(BS, i);
          const j = q < 0 ? (b < 0 ? n : b) : b < 0 ? q : Math.min(q, b);
          if (j > i) {
            dataChars += j - i;
            await feedData(chunk.subarray(i, j));
          }
          i = j;
          if (i >= n) break;
          if (chunk[i] === BS) {
            esc = true;
            i++;
          } else {
            i++; // closing quote
            const tail = decoder!.end();
            if (tail) await sink!.write(tail);
            members.set('data', dataChars === 0 ? '' : `[${dataChars} base64 characters, decoded to ${sink!.size} bytes]`);
            state = S.AfterValue;
          }
          break;
        }
      }
    }
  }
  if (state !== S.Done) throw invalidJson();
  // Object.fromEntries makes every key an own property ("__proto__" included), like JSON.parse.
  return { body: Object.fromEntries(members), file: sink };
}
