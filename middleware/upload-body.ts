/**
 * Streams the body of upload operations (`x-upload-metered: true`) instead of buffering it.
 *
 * Policy:
 * - Only the media types the operation declares are read here: `application/json` through
 *   http/upload/json-body.ts (the base64 `data` is decoded into a temporary file, at most 5 MB
 *   decoded and at most what is left of the upload budget), `multipart/form-data` through
 *   http/upload/multipart-body.ts (the `file` part into a temporary file, at most the largest media
 *   ceiling, tightened to the kind's ceiling once the first bytes show an image, video or audio,
 *   and at most the budget). Anything else is left to the validator (415).
 * - The JSON body is at most the operation's `x-body-limit`; a Content-Length above it is refused
 *   before reading. Compressed bodies (Content-Encoding) are 415: a ceiling must hold for what
 *   is stored, and inflating first would defeat it. The validator then checks `req.body` (the file's bytes replaced by a
 *   placeholder) against the contract as usual; the file is `req.upload`.
 * - Bytes received are charged to the upload budget whatever happens; the temporary file is
 *   removed when the response ends. After a refusal the rest of the body is read and discarded
 *   (up to the body limit), so the client gets the answer on a healthy connection.
 */
import type { NextFunction, Request, Response } from 'express';
import type { AppDeps } from '../http/app-deps.js';
import { onlyFor, operationOf } from '../http/dispatch.js';
import { ApiError } from '../lib/platform/errors.js';
import { readJsonUpload } from '../http/upload/json-body.js';
import { readMultipartUpload } from '../http/upload/multipart-body.js';
import { TempFileSink, type LimitReason } from '../lib/media/temp-file.js';
import { toUploadError } from '../lib/media/errors.js';
import { sniffCeiling } from '../lib/media/verify.js';
import { INLINE_MAX_BYTES, MEDIA_MAX_BYTES } from '../lib/media/types.js';

export interface UploadedBody {
  file: TempFileSink;
  /** Multipart only: the file part's own name and type. */
  partFilename?: string;
  partType?: string;
}

declare module 'express-serve-static-core' {
  interface Request {
    upload?: UploadedBody;
  }
}

/** Multipart framing allowance over the largest file. */
const MULTIPART_OVERHEAD = 64 * 1024;

function declaredTypes(req: Request): string[] {
  const content = (req as any).openapi?.schema?.requestBody?.content;
  return content && typeof content === 'object' ? Object.keys(content) : [];
}

/** Reads and discards the rest of the body (at most `cap` bytes; beyond, the connection closes after the answer). */
function drain(req: Request, res: Response, cap: number): Promise<void> {
  if (req.readableEnded || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const done = () => {
      req.off('data', onData);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > cap) {
        res.setHeader('Connection', 'close');
        req.pause();
        done();
      }
    };
    req.on('data', onData);
    req.once('end', done);
    req.once('close', done);
    req.resume();
  });
}

export function uploadBody(deps: AppDeps) {
  // Only operations that take a file read one (the pipeline leaves it out of the others).
  return onlyFor((op) => op.uploadMetered, read);
  async function read(req: Request, res: Response, next: NextFunction): Promise<void> {
    const op = operationOf(req, deps.contract);
    const type = String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    const declared = declaredTypes(req);
    const json = type === 'application/json' && declared.includes('application/json');
    const multipart = type === 'multipart/form-data' && declared.includes('multipart/form-data');
    if (!json && !multipart) return next();

    const encoding = String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (encoding !== 'identity') {
      res.setHeader('Connection', 'close');
      throw new ApiError('unsupported_media_type', `Content-Encoding ${encoding.slice(0, 50)} is not accepted on uploads; send the body uncompressed.`);
    }
    const budget = req.uploadBudget;
    const remaining = budget ? await budget.remaining() : Number.POSITIVE_INFINITY;
    const bodyCap = json ? op.bodyLimit : MEDIA_MAX_BYTES + MULTIPART_OVERHEAD;
    const length = Number(req.headers['content-length']);
    if (Number.isFinite(length) && length > bodyCap) {
      res.setHeader('Connection', 'close');
      throw new ApiError(json ? op.bodyLimitCode : 'payload_too_large', `Request body exceeds ${bodyCap} bytes.`, { limit: bodyCap });
    }

    let sink: TempFileSink | undefined;
    res.once('close', () => void sink?.remove());
    const ceiling = json ? INLINE_MAX_BYTES : MEDIA_MAX_BYTES;
    const [limit, reason]: [number, LimitReason] = remaining < ceiling ? [remaining, 'budget'] : [ceiling, json ? 'inline' : 'ceiling'];
    const onHead = async (head: Buffer, s: TempFileSink) => {
      const kindCeiling = await sniffCeiling(head);
      if (kindCeiling !== undefined) s.setLimit(kindCeiling, 'ceiling');
    };
    const openSink = () => TempFileSink.create(limit, reason, json ? undefined : onHead, deps.config.uploadTmpDir);
    const onSink = (s: TempFileSink) => {
      sink = s;
    };
    try {
      if (json) {
        const parsed = await readJsonUpload(req, { bodyLimit: op.bodyLimit, bodyLimitCode: op.bodyLimitCode, openSink, onSink });
        req.body = parsed.body;
        if (parsed.file) {
          await parsed.file.finish();
          req.upload = { file: parsed.file };
        }
      } else {
        const parsed = await readMultipartUpload(req, req.headers, { maxBytes: bodyCap, openSink, onSink });
        req.body = { ...parsed.fields, ...(parsed.file ? { file: `[file of ${parsed.file.size} bytes]` } : {}) };
        if (parsed.file) {
          await parsed.file.finish();
          req.upload = { file: parsed.file, partFilename: parsed.partFilename, partType: parsed.partType };
        }
      }
    } catch (e) {
      await drain(req, res, bodyCap);
      throw toUploadError(e, json ? 'inline data' : 'this kind of media', budget);
    } finally {
      await budget?.charge(sink?.size ?? 0);
    }
    next();
  }
}
