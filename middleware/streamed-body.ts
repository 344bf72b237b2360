/**
 * Operations that take a streamed file body (`x-streamed-body: <media type>`, e.g. the contact
 * CSV import) are handed the request stream unread: the JSON parser is skipped and the validator
 * sees a placeholder string, so a large file never sits in memory. A body of another media type
 * is left to the validator (415). Compressed bodies are 415 too (ceilings hold for what is stored).
 */
import type { NextFunction, Request, Response } from 'express';
import type { Contract } from '../http/contract.js';
import { onlyFor, operationOf } from '../http/dispatch.js';
import { ApiError } from '../lib/platform/errors.js';

export function streamedBody(contract: Contract) {
  const streamed = new Map<string, string>();
  for (const item of Object.values<Record<string, any>>(contract.document.paths ?? {})) {
    for (const op of Object.values<any>(item)) {
      if (op && typeof op === 'object' && typeof op['x-streamed-body'] === 'string') streamed.set(op.operationId, op['x-streamed-body']);
    }
  }
  return onlyFor((op) => streamed.has(op.operationId), (req: Request, _res: Response, next: NextFunction): void => {
    const type = streamed.get(operationOf(req, contract).operationId)!;
    const given = String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (given !== type) return next();
    const encoding = String(req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding !== 'identity') return next(new ApiError('unsupported_media_type', `Content-Encoding ${encoding.slice(0, 40)} is not accepted: send the file uncompressed.`));
    (req as unknown as { _body: boolean })._body = true;
    req.body = '';
    next();
  });
}
