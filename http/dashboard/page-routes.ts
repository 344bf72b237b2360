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

/** A page's handlers by method, as one path answers a GET (the page) and a POST (its form). */
export type PageMethods = Partial<Record<PageRoute['method'], PageRoute['handler']>>;

/**
 * The pages of one part of a project, under `/projects/:projectId/<part>`: keyed by the path below
 * it ('' for the part's own page) in the order they are mounted, GET before POST on one path.
 */
export function projectPages(part: string, pages: Record<string, PageMethods>): PageRoute[] {
  return Object.entries(pages).flatMap(([below, methods]) =>
    (['get', 'post'] as const).flatMap((method) => {
      const handler = methods[method];
      return handler ? [{ method, path: `/projects/:projectId/${part}${below}`, handler }] : [];
    }));
}
