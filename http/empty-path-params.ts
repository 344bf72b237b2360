/**
 * An empty path parameter (`GET /v1/segments/`, `/v1/contact-imports//rows`) names the operation whose
 * template has a parameter there, and is refused by it: 400 `invalid_id` after authentication, like any
 * other malformed id. Left alone, the router would treat the trailing slash as absent (`GET /v1/segments/`
 * answered the segment list) or find no route at all (a 404 before authentication).
 *
 * `markEmptyPathParams` runs before the contract pipelines: when a request path has an empty segment
 * where one of its contract's templates (for the request's method) has a parameter, it puts a
 * placeholder there, so the validator matches that operation, and marks the request;
 * `refuseEmptyPathParams` is a policy step placed right after authentication. A path whose empty
 * segment matches no parameter position is left as it is.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Contract } from './contract.js';
import { ApiError } from '../lib/platform/errors.js';
import { onlyFor } from './dispatch.js';

declare module 'express-serve-static-core' {
  interface Request {
    /** The names of path parameters that arrived empty. */
    emptyPathParams?: string[];
  }
}

/** What stands for the empty value until the policy step refuses it; never a literal segment of a contract. */
const PLACEHOLDER = '%00';
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

interface Template {
  method: string;
  segments: string[];
}

function templatesOf(contract: Contract): Template[] {
  const out: Template[] = [];
  for (const [path, item] of Object.entries<Record<string, unknown>>(contract.document.paths ?? {})) {
    if (!path.includes('{')) continue;
    for (const method of METHODS) if (item[method]) out.push({ method: method.toUpperCase(), segments: path.split('/') });
  }
  return out;
}

const paramName = (segment: string) => /^\{([^}]+)\}$/.exec(segment)?.[1];

export function markEmptyPathParams(contracts: Array<{ contract: Contract; prefix: string }>): RequestHandler {
  const byPrefix = contracts.map(({ contract, prefix }) => ({ prefix, templates: templatesOf(contract) }));
  return (req: Request, _res: Response, next: NextFunction) => {
    const url = req.url;
    const q = url.indexOf('?');
    const pathPart = q < 0 ? url : url.slice(0, q);
    if (!pathPart.endsWith('/') && !pathPart.includes('//')) return next();
    const scope = byPrefix.find((b) => pathPart.startsWith(b.prefix));
    if (!scope) return next();
    const segments = pathPart.split('/');
    for (const t of scope.templates) {
      if (t.method !== req.method || t.segments.length !== segments.length) continue;
      const empty: string[] = [];
      const fits = t.segments.every((s, i) => {
        const name = paramName(s);
        if (name === undefined) return s === segments[i];
        if (segments[i] === '') empty.push(name);
        return true;
      });
      if (!fits || empty.length === 0) continue;
      const rewritten = segments.map((s, i) => (i > 0 && s === '' ? PLACEHOLDER : s)).join('/');
      req.url = rewritten + (q < 0 ? '' : url.slice(q));
      // The validator matches on originalUrl (as in handlers/files.ts).
      if (req.originalUrl === url) req.originalUrl = req.url;
      req.emptyPathParams = empty;
      break;
    }
    next();
  };
}

/** After authentication: an empty path parameter is a malformed id. */
export const refuseEmptyPathParams: RequestHandler = onlyFor((op) => op.path.includes('{'), (req, _res, next) => {
  const empty = req.emptyPathParams;
  if (!empty?.length) return next();
  const fields = empty.map((name) => ({ field: `path.${name}`, message: 'must not be empty' }));
  next(new ApiError('invalid_id', `The path parameter ${empty.map((n) => `{${n}}`).join(', ')} is empty.`, { fields }));
});
