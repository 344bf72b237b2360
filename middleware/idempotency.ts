/**
 * Idempotency-Key, for operations marked `x-idempotent: true` in the contract. The spec's state
 * machine: a new key is claimed (in progress); the same key while the first request runs is 409
 * idempotency_in_progress; the same key with another request (fingerprint over method, path and
 * body with object keys sorted, array order kept) is 409 idempotency_key_mismatch; a 2xx or 4xx
 * outcome is stored and replayed for 24 hours, a 5xx releases the key. Keys are scoped to the
 * selected project. Claiming is one atomic upsert, so concurrent requests with one key cause
 * exactly one execution. A claim left by a crashed instance is taken over after a grace period.
 */
import { createHash } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../lib/errors.js';
import type { AppDeps } from '../lib/deps.js';
import { operationOf } from '../lib/dispatch.js';

const RETENTION_MS = 24 * 60 * 60 * 1000;
/** Longer than any request can run (upstream timeout included). */
const ABANDONED_AFTER_MS = 2 * 60 * 1000;

/** JSON with object keys sorted at every depth; arrays keep their order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export function fingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method.toUpperCase()} ${path}\n${canonicalJson(body)}`).digest('hex');
}

interface Stored {
  fingerprint: string;
  state: string;
  status_code: number | null;
  body: unknown;
  claimed: boolean;
}

export function idempotency(deps: AppDeps) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const header = req.headers['idempotency-key'];
    if (header === undefined || !req.auth || !operationOf(req, deps.contract).idempotent) return next();
    const key = Array.isArray(header) ? header.join(',') : header;
    if (key.length === 0 || key.length > 255) {
      throw new ApiError('invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 characters.', { length: key.length });
    }
    const projectId = req.auth.project.id;
    const print = fingerprint(req.method, req.path, req.body);
    const now = deps.clock.now();

    // Claim the key: insert, or take over a record that expired or was abandoned.
    const { rows } = await deps.db.pool.query<Stored>({
      name: 'idempotency-claim',
      text: `INSERT INTO idempotency_records AS r (project_id, key, fingerprint, state, created_at, expires_at)
             VALUES ($1, $2, $3, 'in_progress', $4, $5)
             ON CONFLICT (project_id, key) DO UPDATE
               SET fingerprint = EXCLUDED.fingerprint, state = 'in_progress', status_code = NULL, body = NULL,
                   created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
               WHERE r.expires_at <= $4 OR (r.state = 'in_progress' AND r.created_at <= $6)
             RETURNING fingerprint, state, status_code, body, true AS claimed`,
      values: [projectId, key, print, now, new Date(now.getTime() + RETENTION_MS), new Date(now.getTime() - ABANDONED_AFTER_MS)],
    });
    if (rows.length === 0) {
      const existing = await deps.db.pool.query<Stored>({
        name: 'idempotency-read',
        text: 'SELECT fingerprint, state, status_code, body, false AS claimed FROM idempotency_records WHERE project_id = $1 AND key = $2',
        values: [projectId, key],
      });
      const record = existing.rows[0];
      if (!record) throw new ApiError('idempotency_in_progress', 'A request with this Idempotency-Key is being processed; retry shortly.');
      if (record.fingerprint !== print) {
        throw new ApiError('idempotency_key_mismatch', 'This Idempotency-Key was used with a different request; use a new key for a new request.');
      }
      if (record.state !== 'completed') {
        throw new ApiError('idempotency_in_progress', 'A request with this Idempotency-Key is still being processed; retry shortly.');
      }
      res.setHeader('Idempotent-Replayed', 'true');
      res.status(record.status_code ?? 200).json(record.body);
      return;
    }

    // We own the key: store the outcome before the response leaves, so a retry that arrives
    // right after it sees the stored result, never a stale claim.
    const send = res.json.bind(res);
    res.json = (body: unknown) => {
      const status = res.statusCode;
      const settle =
        status >= 500
          ? deps.db.pool.query({ name: 'idempotency-release', text: 'DELETE FROM idempotency_records WHERE project_id = $1 AND key = $2', values: [projectId, key] })
          : deps.db.pool.query({
              name: 'idempotency-complete',
              text: `UPDATE idempotency_records SET state = 'completed', status_code = $3, body = $4 WHERE project_id = $1 AND key = $2`,
              values: [projectId, key, status, JSON.stringify(body)],
            });
      settle
        .catch((e) => deps.logger.error('idempotency: could not settle key', { request_id: req.requestId, error: String(e) }))
        .finally(() => send(body));
      return res;
    };
    next();
  };
}
