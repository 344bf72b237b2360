/**
 * The API reference page: `GET /docs` renders the served contract (`/v1/openapi.json`) with Redoc.
 * Redoc's standalone bundle is served from node_modules (`GET /docs/redoc.standalone.js`), so the
 * page needs no external network. redoc 2.x, not 3: redoc 3 declares Node >= 22.
 * Public like the contract itself: no credential, not rate limited.
 */
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { Router, type NextFunction, type Request, type Response } from 'express';

const bundlePath = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');

/**
 * Redoc's "API docs by Redocly" footer loads its logo from Redocly's CDN, which the page's own CSP
 * blocks (a console error on every load) and which would be an outside request anyway: the bundle
 * is served with a local icon instead.
 */
export const REDOC_OUTSIDE_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
const LOCAL_LOGO = '/favicon.svg';

// No inline script: the <redoc> element starts the bundle by itself. Redoc injects its styles
// and runs its search index in a blob: worker.
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Messaging Automation Service API reference</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
</head>
<body>
<redoc spec-url="/v1/openapi.json" hide-download-button="false"></redoc>
<script src="/docs/redoc.standalone.js"></script>
</body>
</html>
`;

// Every request passes here: only these paths enter the router (its matching costs more).
const REFERENCE = /^\/docs(?:\/redoc\.standalone\.js)?\/?$/i;

export function apiReferenceRoutes(): (req: Request, res: Response, next: NextFunction) => void {
  const router = Router();
  // Read once: 1 MB of JavaScript, the same for the process's life.
  let bundle: Buffer | undefined;

  router.get('/docs', (_req: Request, res: Response) => {
    res.status(200).type('html').setHeader('Content-Security-Policy', CSP).send(PAGE);
  });

  router.get('/docs/redoc.standalone.js', (_req: Request, res: Response) => {
    bundle ??= Buffer.from(readFileSync(bundlePath, 'utf8').replaceAll(REDOC_OUTSIDE_LOGO, LOCAL_LOGO));
    // Public and versioned with the package: a browser may keep it for an hour.
    res.status(200).type('application/javascript').setHeader('Cache-Control', 'public, max-age=3600').send(bundle);
  });
  return (req, res, next) => (REFERENCE.test(req.path) ? router(req, res, next) : next());
}
