/**
 * Selects the project a request acts on, by the spec's X-Service-Project table, and refuses
 * inactive projects. Operations marked `x-project-scoped: false` (listing projects) skip this:
 * they ignore the header and work while the default project is paused.
 */
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../lib/platform/errors.js';
import type { AuthContext, Credential, Grant } from '../lib/access/types.js';
import type { AppDeps } from '../http/app-deps.js';
import { onlyFor } from '../http/dispatch.js';

export type { AuthContext } from '../lib/access/types.js';

declare module 'express-serve-static-core' {
  interface Request {
    auth?: AuthContext;
  }
}

const READS = new Set(['GET', 'HEAD']);

export function selectGrant(credential: Credential, header: string | string[] | undefined, method: string): Grant {
  if (header !== undefined) {
    const value = Array.isArray(header) ? header.join(',') : header;
    if (value.trim() === '') throw new ApiError('invalid_project_header', 'X-Service-Project is blank: name a project or omit the header.');
  }
  const wanted = typeof header === 'string' ? header.trim().toLowerCase() : undefined;
  const { grants } = credential;
  if (grants.length === 0) throw new ApiError('no_project_access', 'This connection has no projects attached.');
  if (wanted !== undefined) {
    const grant = grants.find((g) => g.project.id === wanted);
    if (!grant) throw new ApiError('project_not_attached', `Project "${wanted}" is not reachable by this credential.`);
    return grant;
  }
  if (credential.kind === 'api_key' || grants.length === 1) return grants[0];
  if (READS.has(method)) return grants.find((g) => g.isDefault) ?? grants[0];
  throw new ApiError('project_required', 'This connection reaches several projects: name one in X-Service-Project.');
}

export function selectProject(deps: AppDeps) {
  // Only operations on one project select it (the pipeline leaves it out of the others).
  return onlyFor((op) => op.projectScoped, (req: Request, _res: Response, next: NextFunction): void => {
    if (!req.credential) return next();
    const grant = selectGrant(req.credential, req.headers['x-service-project'], req.method);
    if (grant.project.status !== 'active') {
      throw new ApiError('project_inactive', `Project "${grant.project.id}" is ${grant.project.status}.`);
    }
    req.auth = { credential: req.credential, project: grant.project, scopes: grant.scopes };
    next();
  });
}
