/**
 * Idempotency-Key, for operations marked `x-idempotent: true` in the contract. The spec's state
 * machine: a new key is claimed (in progress); the same key while the first request runs is 409
 * idempotency_in_progress; the same key with another request (fingerprint over method, path and
 * body with object keys sorted, array order kept) is 409 idempotency_key_mismatch; a 2xx or 4xx
 * outcome is stored and replayed for 24 hours, a 5xx releases the key. Keys are scoped to the
 * selected project. Claiming is one atomic upsert, so concurrent requests with one key cause
 * exactly one execution. A claim left by a crashed instance is taken over after a grace period,
 * unless it already started a send (`message_ref`, linked before the channel is called): such a
 * key is settled from that message, never by sending again. While the send's outcome is unknown
 * (a timeout, or a crash after the call) a retry gets 409 idempotency_in_progress; once the
 * channel's status names the message, the retry gets the send's answer. A 5xx releases the key
 * only when no send is pending behind it. Replays restore Retry-After (recomputed from the
 * stored `resetAt` when the error has one).
 */
import { createHash } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../lib/platform/errors.js';
import type { AppDeps } from '../http/app-deps.js';
import { operationOf } from '../http/dispatch.js';

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
  headers: Record<string, string> | null;
  message_ref: string | null;
  claimed: boolean;
}

/** Headers a replay restores. */
const REPLAYED_HEADERS = ['retry-after'];

/** Retry-After of a replay: from the stored error's resetAt when it has one (the wait shrinks), else as stored. */
function replayHeaders(record: Stored, now: Date): Record<string, string> {
  const out: Record<string, string> = { ...(record.headers ?? {}) };
  const resetAt = (record.body as { error?: { details?: { resetAt?: unknown } } } | null)?.error?.details?.resetAt;
  if (out['retry-after'] !== undefined && typeof resetAt === 'string' && !Number.isNaN(Date.parse(resetAt))) {
    out['retry-after'] = String(Math.max(1, Math.ceil((Date.parse(resetAt) - now.getTime()) / 1000)));
  }
  return out;
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
               WHERE r.expires_at <= $4 OR (r.state = 'in_progress' AND r.created_at <= $6 AND r.message_ref IS NULL)
             RETURNING fingerprint, state, status_code, body, headers, message_ref, true AS claimed`,
      values: [projectId, key, print, now, new Date(now.getTime() + RETENTION_MS), new Date(now.getTime() - ABANDONED_AFTER_MS)],
    });
    if (rows.length === 0) {
      const existing = await deps.db.pool.query<Stored>({
        name: 'idempotency-read',
        text: 'SELECT fingerprint, state, status_code, body, headers, message_ref, false AS claimed FROM idempotency_records WHERE project_id = $1 AND key = $2',
        values: [projectId, key],
      });
      let record = existing.rows[0];
      if (!record) throw new ApiError('idempotency_in_progress', 'A request with this Idempotency-Key is being processed; retry shortly.');
      if (record.fingerprint !== print) {
        throw new ApiError('idempotency_key_mismatch', 'This Idempotency-Key was used with a different request; use a new key for a new request.');
      }
      if (record.state !== 'completed' && record.message_ref) record = (await settleFromSend(deps, projectId, key, record)) ?? record;
      if (record.state !== 'completed') {
        throw new ApiError(
          'idempotency_in_progress',
          record.message_ref
            ? "The send started with this Idempotency-Key has no known outcome yet (the channel has not reported it); retry later: it is never sent twice."
            : 'A request with this Idempotency-Key is still being processed; retry shortly.',
        );
      }
      res.setHeader('Idempotent-Replayed', 'true');
      res.set(replayHeaders(record, now));
      res.status(record.status_code ?? 200).json(record.body);
      return;
    }

    // We own the key: store the outcome before the response leaves, so a retry that arrives
    // right after it sees the stored result, never a stale claim.
    const send = res.json.bind(res);
    res.json = (body: unknown) => {
      const status = res.statusCode;
      const headers: Record<string, string> = {};
      for (const h of REPLAYED_HEADERS) {
        const v = res.getHeader(h);
        if (v !== undefined) headers[h] = String(v);
      }
      const settle =
        status >= 500
          ? deps.db.pool.query({
              // Released, unless a send whose outcome is unknown stands behind the key.
              name: 'idempotency-release',
              text: `DELETE FROM idempotency_records r WHERE r.project_id = $1 AND r.key = $2
                     AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.project_id = r.project_id AND m.client_ref = r.message_ref)`,
              values: [projectId, key],
            })
          : deps.db.pool.query({
              name: 'idempotency-complete',
              text: `UPDATE idempotency_records SET state = 'completed', status_code = $3, body = $4, headers = $5 WHERE project_id = $1 AND key = $2`,
              values: [projectId, key, status, JSON.stringify(body), Object.keys(headers).length ? JSON.stringify(headers) : null],
            });
      settle
        .catch((e) => deps.logger.error('idempotency: could not settle key', { request_id: req.requestId, error: String(e) }))
        .finally(() => send(body));
      return res;
    };
    next();
  };
}

/**
 * A key whose send is recorded: once the channel has named the message (a wamid, any status but
 * pending), the key completes with the answer the send would have given; a send that certainly
 * failed left no message, and the key is released for a new attempt.
 */
async function settleFromSend(deps: AppDeps, projectId: string, key: string, record: Stored): Promise<Stored | undefined> {
  const { rows } = await deps.db.pool.query<{ wamid: string; status: string }>({
    name: 'idempotency-send-outcome',
    text: 'SELECT wamid, status FROM messages WHERE project_id = $1 AND client_ref = $2',
    values: [projectId, record.message_ref],
  });
  const message = rows[0];
  if (!message) {
    await deps.db.pool.query({
      name: 'idempotency-release-failed-send',
      text: `DELETE FROM idempotency_records WHERE project_id = $1 AND key = $2 AND state = 'in_progress' AND message_ref = $3`,
      values: [projectId, key, record.message_ref],
    });
    return undefined;
  }
  if (message.status === 'pending') return undefined;
  const body = { success: true, data: { id: message.wamid, status: 'sent' } };
  await deps.db.pool.query({
    name: 'idempotency-complete-from-send',
    text: `UPDATE idempotency_records SET state = 'completed', status_code = 200, body = $4 WHERE project_id = $1 AND key = $2 AND message_ref = $3`,
    values: [projectId, key, record.message_ref, JSON.stringify(body)],
  });
  return { ...record, state: 'completed', status_code: 200, body, headers: null };
}
