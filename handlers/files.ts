/** The bot's code files (lib/code/): list, read, write the development tree. Thin. */
import type { Request, Response, NextFunction } from 'express';
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import { CODE_LIMITS, listFiles as list, putFile as put, readFile } from '../lib/code/store.js';

function header(req: HandlerReqLike, name: string): string | undefined {
  const v = req.http.headers[name];
  return v === undefined ? undefined : Array.isArray(v) ? v.join(',') : v;
}
type HandlerReqLike = { http: Request };

export const listFiles: Handler<operations['listFiles']> = async (req, deps) => {
  const tree = req.query.tree ?? 'development';
  const { files, totalSize } = await list(deps.db, req.auth!.project.id, tree, deps.clock.now());
  return { data: { tree, files, total_size: totalSize, limits: { file_bytes: CODE_LIMITS.fileBytes, tree_bytes: CODE_LIMITS.treeBytes, files: CODE_LIMITS.files } } };
};

export const getFile: Handler<operations['getFile']> = async (req, deps) => {
  const tree = req.query.tree ?? 'development';
  const file = await readFile(deps.db, req.auth!.project.id, tree, req.params.path, deps.clock.now());
  return { data: { tree, file }, headers: { ETag: file.etag } };
};

export const putFile: Handler<operations['putFile']> = async (req, deps) => {
  const { file, created } = await put(deps.db, req.auth!.project.id, req.params.path, req.body.content, {
    ifMatch: header(req, 'if-match'),
    ifNoneMatch: header(req, 'if-none-match'),
  }, deps.clock.now());
  return { status: created ? 201 : 200, data: { tree: 'development', file }, headers: { ETag: file.etag } };
};

/**
 * `/v1/files/src/bot.ts` is the same request as `/v1/files/src%2Fbot.ts`: the contract's `{path}`
 * is one segment, so the slashes after `/v1/files/` are encoded before routing.
 */
export function filesPathSegments(req: Request, _res: Response, next: NextFunction): void {
  const url = req.url;
  if (url.startsWith('/v1/files/')) {
    const q = url.indexOf('?');
    const pathPart = q < 0 ? url : url.slice(0, q);
    const rest = pathPart.slice('/v1/files/'.length);
    if (rest.includes('/')) {
      // The validator matches on originalUrl; both carry the encoded form.
      req.url = '/v1/files/' + rest.replace(/\//g, '%2F') + (q < 0 ? '' : url.slice(q));
      if (req.originalUrl === url) req.originalUrl = req.url;
    }
  }
  next();
}
