/**
 * The icon browsers ask for (`/favicon.ico`, and `/favicon.svg` that the dashboard and /docs link
 * to): a small speech bubble, SVG, public, no credential. Without it every page load logged a 404.
 */
import { Router, type Request, type Response } from 'express';

export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><title>Messaging Automation Service</title><path fill="#0f7a4a" d="M16 3C8.8 3 3 8.2 3 14.6c0 3.3 1.6 6.3 4.1 8.4L6 29l6.1-3.3c1.2.3 2.5.5 3.9.5 7.2 0 13-5.2 13-11.6S23.2 3 16 3z"/><path fill="#fff" d="M10 12h12v2H10zm0 4h8v2h-8z"/></svg>`;

export function faviconRoutes(): Router {
  const router = Router();
  const send = (_req: Request, res: Response) => {
    res.status(200).type('image/svg+xml').setHeader('Cache-Control', 'public, max-age=86400').send(FAVICON_SVG);
  };
  router.get('/favicon.ico', send);
  router.get('/favicon.svg', send);
  return router;
}
