/**
 * What operators and load balancers probe, outside the contracts (no credential, never rate
 * limited, not logged per request): `GET /healthz` (the process answers; touches nothing),
 * `GET /readyz` (PostgreSQL answers and takes writes, migrations applied, jobs running, Redis reachable when
 * configured; 503 `service_unavailable` naming the failed checks, and 503 from the moment a
 * shutdown begins) and `GET /metrics` (Prometheus text, with the operator token). Query strings
 * and bodies are ignored.
 */
import { Router, type NextFunction, type Request, type Response } from 'express';
import { ApiError } from '../lib/platform/errors.js';
import { hashSecret, safeEqual } from '../lib/platform/secrets.js';
import type { Metrics } from '../lib/platform/metrics.js';
import type { GraphVersionReport } from '../channel/graph-versions.js';
import type { HaReport } from '../lib/platform/ha-watch.js';

export interface Readiness {
  ready: boolean;
  /** Each check: `ok`, `not configured`, or what is wrong. */
  checks: Record<string, string>;
  /** The configured Graph API version against Meta's end dates (informational: never makes it unready). */
  graph_api?: GraphVersionReport & { warning: string | null };
  /** What the high-availability topology lacks (informational: never makes it unready). */
  ha?: HaReport;
}

export interface OperationalOptions {
  readiness: () => Promise<Readiness>;
  metrics?: Metrics;
  adminToken: string;
}

// Every request passes here first: only these paths enter the router (its matching costs more).
const OPERATIONAL = /^\/(?:healthz|readyz|metrics)\/?$/i;

export function operationalRoutes(opts: OperationalOptions): (req: Request, res: Response, next: NextFunction) => void {
  const router = Router();
  const expected = hashSecret(opts.adminToken);

  router.get('/healthz', (_req: Request, res: Response) => {
    res.status(200).json({ success: true, data: { status: 'ok' } });
  });

  router.get('/readyz', async (_req: Request, res: Response) => {
    const report = await opts.readiness();
    if (!report.ready) {
      const failed = Object.entries(report.checks).filter(([, v]) => v !== 'ok' && v !== 'not configured');
      throw new ApiError('service_unavailable', `Not ready: ${failed.map(([k, v]) => `${k} ${v}`).join('; ')}.`, { checks: report.checks }, { 'Retry-After': '2' });
    }
    res.status(200).json({ success: true, data: report });
  });

  router.get('/metrics', async (req: Request, res: Response) => {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(req.headers.authorization ?? '');
    if (!match) throw new ApiError('api_key_required', 'Send Authorization: Bearer <ADMIN_TOKEN> to read the metrics.');
    if (!safeEqual(hashSecret(match[1]), expected)) throw new ApiError('invalid_token', 'The operator token is wrong.');
    if (!opts.metrics) throw new ApiError('not_found', 'Metrics are not enabled on this instance.');
    res.status(200).type(opts.metrics.registry.contentType).send(await opts.metrics.registry.metrics());
  });
  return (req, res, next) => (OPERATIONAL.test(req.path) ? router(req, res, next) : next());
}
