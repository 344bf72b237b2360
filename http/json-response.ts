/**
 * A JSON answer written straight onto Node's response: Express's `res.json` → `res.send` looks up
 * the content type, parses it again to add the charset, checks freshness against request headers
 * and measures the body, on every response of an API whose answers are always fresh JSON. Here
 * the body is serialised once and leaves with its headers in one write, byte for byte what
 * `res.json` writes (`application/json; charset=utf-8`, `Content-Length`, no ETag: the app
 * disables it).
 *
 * A response whose `json` was replaced (the idempotency record, the contract's response checks in
 * tests and sampled in production) or that set its own Content-Type goes through `res.json`, so
 * whatever hooks it sees every answer.
 */
import type { Request, Response } from 'express';

export function sendJson(req: Request, res: Response, status: number, value: unknown): void {
  if (value === undefined || Object.hasOwn(res, 'json') || status === 204 || status === 304 || res.getHeader('content-type') !== undefined) {
    res.status(status).json(value);
    return;
  }
  writeJsonText(req, res, status, JSON.stringify(value));
}

/**
 * A body already serialised (the idempotency record stores the same text it answers with),
 * written as sendJson writes it. The caller has checked what sendJson checks first: a body, a
 * status with content, no Content-Type of the response's own and no hook on `res.json`.
 */
export function writeJsonText(req: Request, res: Response, status: number, body: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  // A string body leaves in the same write as the status line and headers.
  if (req.method === 'HEAD') res.end();
  else res.end(body, 'utf8');
}
