/**
 * How a page module declares its routes (router.ts mounts them, in the order of its list of
 * modules): each `*-pages.ts` exports its own list, as each page names its own tab.
 */
import type { AppDeps } from '../app-deps.js';
import type { PageHandler } from './request.js';
import type { FormSchema } from './form-schema.js';

export interface DashboardOptions {
  /** The Cloud API simulator's URL, linked from each project outside production. */
  simulatorUrl?: string;
}

export interface PageRoute {
  method: 'get' | 'post';
  /** Under /dashboard, in Express's syntax (`/projects/:projectId/keys`). */
  path: string;
  handler: (deps: AppDeps, opts: DashboardOptions) => PageHandler;
  /**
   * Where it is mounted: `public` before the session check (sign-in, setup, an invitation, the
   * consent page reached without the cookie); `stream` before the form parser as well (a multipart
   * upload, which checks the session and CSRF itself); by default behind the session and CSRF check.
   */
  stage?: 'public' | 'stream';
  /** The fields of a POST form, checked by `readForm` where the handler reads them (form-schema.ts). */
  form?: FormSchema;
}
