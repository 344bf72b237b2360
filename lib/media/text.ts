/**
 * Plain text has no signature, so "is this text/plain?" needs a rule of our own. Policy: a file is
 * plain text when
 *   1. file-type finds no signature in it (checked by the caller: XML, HTML-with-signature, images,
 *      archives and every binary format it knows are therefore not text),
 *   2. the whole file is valid UTF-8 (a leading byte-order mark is allowed; UTF-16 is not accepted),
 *   3. it contains no NUL and no other control character except tab, line feed, carriage return
 *      and form feed: no C0 controls, no DEL, no C1 controls (U+0080–U+009F), which are what
 *      binary data or mis-decoded text shows.
 * The file is read as a stream in chunks; the decision costs one pass and constant memory.
 */
import { createReadStream } from 'node:fs';

// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[\u0000-\u0008\u000b\u000e-\u001f\u007f-\u009f]/;

export async function isPlainTextFile(path: string): Promise<boolean> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  try {
    for await (const chunk of createReadStream(path, { highWaterMark: 256 * 1024 })) {
      if (FORBIDDEN.test(decoder.decode(chunk as Buffer, { stream: true }))) return false;
    }
    return !FORBIDDEN.test(decoder.decode());
  } catch {
    return false; // invalid UTF-8
  }
}
