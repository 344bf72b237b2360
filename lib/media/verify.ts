/**
 * What a file really is, from its own bytes, and whether that may be accepted.
 *
 * Policy:
 * - The declared type (the request's `mime`, a multipart part's type or a download's Content-Type)
 *   is never trusted. The content type is found by file-type from the bytes' signature, then:
 *   a Compound File (application/x-cfb) is Word/Excel/PowerPoint only by its root streams
 *   (./cfb.ts); OOXML (docx/xlsx/pptx) is recognised by file-type from the zip's content types; a
 *   plain zip is just a zip. No signature at all: plain text when ./text.ts says so, else unknown.
 * - 415 `unsupported_media_type` when the declared type is not one accepted here, when the content
 *   is not an accepted type, or when a specific declared type disagrees with the content.
 *   `application/octet-stream` (or nothing) declares nothing and is not a disagreement.
 * - The accepted, verified type is what we report and pass on (the response `mime_type`).
 */
import { open } from 'node:fs/promises';
import { fileTypeFromBuffer, fileTypeFromFile } from 'file-type';
import { ApiError } from '../platform/errors.js';
import { cfbRootNames, officeTypeOf } from './cfb.js';
import { isPlainTextFile } from './text.js';
import { isGenericMime, KIND_RULES, kindOf, normalizeMime, TEXT } from './types.js';
import type { TempFile } from './temp-file.js';

/** Canonical forms of what file-type reports, where they differ from our names. */
const DETECTED_ALIASES: Record<string, string> = {
  'audio/x-m4a': 'audio/mp4',
  // WhatsApp takes OGG audio with the OPUS codec only; other OGG audio stays "audio/ogg+other".
  'audio/ogg; codecs=opus': 'audio/ogg',
  'audio/ogg': 'audio/ogg+other',
};

/** The content's type by its bytes, canonical, or undefined when unknown. */
export async function detectType(file: Pick<TempFile, 'path' | 'size'>): Promise<string | undefined> {
  const found = await fileTypeFromFile(file.path);
  if (!found) return (await isPlainTextFile(file.path)) ? TEXT : undefined;
  // file-type 21 (the last line that supports Node 20) reads a UTF-16 byte-order mark (FF FE, FE FF)
  // as an MPEG frame sync; such a file is UTF-16 text, which no format accepts.
  if (found.mime === 'audio/mpeg' && (await startsWithUtf16Bom(file.path))) return undefined;
  if (found.mime === 'application/x-cfb') {
    const handle = await open(file.path, 'r');
    try {
      const readAt = async (position: number, length: number) => {
        const buf = Buffer.alloc(length);
        const { bytesRead } = await handle.read(buf, 0, length, position);
        return buf.subarray(0, bytesRead);
      };
      const names = await cfbRootNames(readAt, file.size);
      return (names && officeTypeOf(names)) ?? found.mime;
    } finally {
      await handle.close();
    }
  }
  return DETECTED_ALIASES[found.mime] ?? found.mime;
}

async function startsWithUtf16Bom(filePath: string): Promise<boolean> {
  const handle = await open(filePath, 'r');
  try {
    const head = Buffer.alloc(2);
    const { bytesRead } = await handle.read(head, 0, 2, 0);
    return bytesRead === 2 && ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff));
  } finally {
    await handle.close();
  }
}

/**
 * The ceiling of the media kind the first bytes show (image 5 MB, video/audio 16 MB), so a media
 * upload whose kind is not known in advance stops early; undefined when the head says nothing
 * narrower than a document.
 */
export async function sniffCeiling(head: Buffer): Promise<number | undefined> {
  const found = await fileTypeFromBuffer(head).catch(() => undefined);
  if (!found) return undefined;
  const kind = kindOf(DETECTED_ALIASES[found.mime] ?? found.mime);
  return kind && kind !== 'document' ? KIND_RULES[kind].maxBytes : undefined;
}

function unsupported(message: string, details: Record<string, unknown>): ApiError {
  return new ApiError('unsupported_media_type', message, details);
}

/**
 * The verified type of `file`, or 415. `accepted` lists the canonical types allowed here; `what`
 * names the thing in messages ("an IMAGE header sample", "a media asset").
 */
export async function verifyContent(file: Pick<TempFile, 'path' | 'size'>, declaredRaw: string | undefined, accepted: readonly string[], what: string): Promise<string> {
  const declared = normalizeMime(declaredRaw);
  if (declaredRaw !== undefined && declared === undefined && declaredRaw.trim() !== '') {
    throw unsupported(`"${declaredRaw.slice(0, 100)}" is not a media type.`, { declared: declaredRaw.slice(0, 255), accepted });
  }
  if (!isGenericMime(declared) && !accepted.includes(declared!)) {
    throw unsupported(`${declared} is not accepted for ${what}; accepted: ${accepted.join(', ')}.`, { declared, accepted });
  }
  const detected = await detectType(file);
  if (detected === undefined || !accepted.includes(detected)) {
    throw unsupported(
      `The content is ${detected ? detected.replace('+other', ' (not OPUS)') : 'of no recognised type'}, which is not accepted for ${what}; accepted: ${accepted.join(', ')}.`,
      { declared: declared ?? null, detected: detected ?? null, accepted },
    );
  }
  if (!isGenericMime(declared) && declared !== detected) {
    throw unsupported(`The content is ${detected}, not the declared ${declared}.`, { declared, detected });
  }
  return detected;
}
