/**
 * Idempotency-Key, for operations marked `x-idempotent: true` in the contract. The spec's state
 * machine: a new key is claimed (in progress); the same key while the first request runs is 409
 * idempotency_in_progress; the same key with another request (fingerprint over method, path and
 * body with object keys sorted, array order kept) is 409 idempotency_key_mismatch; a 2xx or 4xx
 * outcome is stored and replayed for 24 hours, a 5xx releases the key. Keys are scoped to the
 * selected project. Claiming is one atomic upsert, so concurrent requests with one key cause
 * exactly one execution. Replays restore Retry-After (recomputed from the stored `resetAt` when
 * the error has one).
 *
 * This store knows keys, fingerprints and stored answers only. An operation whose work can
 * outlive its request (a send whose outcome is unknown) links a reference to its key in its own
 * transaction (`send_ref`) and registers here how such a key is answered
 * (`registerPendingAnswers`): still pending (409), gone (the work certainly did not happen: the key
 * is released for a new attempt), or a final answer, stored and replayed from then on. A claim
 * left by a crashed instance is taken over after a grace period unless such a reference is linked,
 * and a 5xx releases the key only when the operation says its reference is gone. Work done in one
 * transaction links its key to that transaction with the answer its commit gives
 * (lib/platform/idempotency-transactions.ts): PostgreSQL's record of the transaction says which.
 * An operation that stores its 2xx answer in its own last statement (a send's confirm) says so in
 * its reply (`keyAnswered`), and the answer is not stored a second time.
 */
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../lib/platform/errors.js';
import type { AppDeps } from '../http/app-deps.js';
import { onlyFor, operationOf } from '../http/dispatch.js';
import { writeJsonText } from '../http/json-response.js';
import { completeLinkedKey, releaseKey, releaseLinkedKey, type StoredKey } from '../lib/platform/idempotency-store.js';
import { claimBatched, completeBatched } from '../lib/platform/idempotency-batch.js';
import { claimOnce, fingerprint } from '../lib/platform/idempotency.js';
import { releaseFailedClaimLater, writesUnconfirmedRefusal } from '../lib/platform/idempotency-failed-claims.js';
import { isDatabaseUnavailable } from '../lib/platform/db/errors.js';
import { isTransactionRef, transactionOutcome } from '../lib/platform/idempotency-transactions.js';

type Stored = StoredKey;

/** How the operation answers a key whose linked work has not finished with the request. */
export type PendingAnswer =
  | { state: 'pending'; message: string }
  | { state: 'gone' }
  | { state: 'final'; status: number; body: unknown };

export type PendingResolver = (deps: AppDeps, linked: { projectId: string; ref: string; requestId: string }) => Promise<PendingAnswer>;

const resolvers = new Map<string, PendingResolver>();

/** An operation (by operationId) says how a key whose linked work is still open is answered. */
export function registerPendingAnswers(operationId: string, resolve: PendingResolver): void {
  resolvers.set(operationId, resolve);
}

declare module 'express-serve-static-core' {
  interface Request {
    /** The request's Idempotency-Key, validated and claimed here (operations marked x-idempotent). */
    idempotencyKey?: string;
    /** Its 2xx answer was stored by the operation's own statement (a send's confirm): not stored again here. */
    idempotencyAnswered?: boolean;
  }
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
  // Only operations marked x-idempotent honour the header (the pipeline leaves it out of the others).
  return onlyFor((op) => op.idempotent, async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const header = req.headers['idempotency-key'];
    if (header === undefined || !req.auth) return next();
    const op = operationOf(req, deps.contract);
    const resolver = resolvers.get(op.operationId);
    const key = Array.isArray(header) ? header.join(',') : header;
    if (key.length === 0 || key.length > 255) {
      throw new ApiError('invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 characters.', { length: key.length });
    }
    const projectId = req.auth.project.id;
    const print = fingerprint(req.method, req.path, req.body);
    const now = deps.clock.now();

    // Claim the key: insert, or take over a record that expired or was abandoned (lib/platform/idempotency.ts).
    // Batched with the project's other claims in flight (lib/platform/idempotency-batch.ts).
    const held = await claimOnce(deps.db.sql, projectId, key, print, now, async () => {
      try {
        return await claimBatched(deps.db.sql, projectId, key, print, now);
      } catch (e) {
        // Answered 503, and the handler never runs: a claim committed all the same is deleted (not left to block retries).
        if (isDatabaseUnavailable(e)) {
          releaseFailedClaimLater(deps.db.sql, projectId, key, print, now, (err) =>
            deps.logger.warn('idempotency: could not release a claim whose statement failed; the key is taken over once abandoned', { request_id: req.requestId, error: String(err) }));
        }
        throw e;
      }
    });
    if (held.state !== 'claimed') {
      if (held.state === 'mismatch') {
        throw new ApiError('idempotency_key_mismatch', 'This Idempotency-Key was used with a different request; use a new key for a new request.');
      }
      if (!held.record) throw inProgress(deps, 'A request with this Idempotency-Key is being processed; retry shortly.');
      let record = held.record;
      let pending = 'A request with this Idempotency-Key is still being processed; retry shortly.';
      if (record.state !== 'completed' && record.send_ref && isTransactionRef(record.send_ref)) {
        // Linked to the transaction doing the work (lib/platform/idempotency-transactions.ts): its commit decides.
        const outcome = await transactionOutcome(deps.db.sql, record.send_ref);
        if (outcome === 'aborted') await releaseLinkedKey(deps.db.sql, projectId, key, record.send_ref);
        else if (outcome === 'committed' && record.status_code !== null) record = await completeLinked(deps, projectId, key, record, { status: record.status_code, body: record.body });
      } else if (record.state !== 'completed' && record.send_ref && resolver) {
        const answer = await resolver(deps, { projectId, ref: record.send_ref, requestId: req.requestId });
        if (answer.state === 'gone') await releaseLinkedKey(deps.db.sql, projectId, key, record.send_ref);
        else if (answer.state === 'pending') pending = answer.message;
        else record = await completeLinked(deps, projectId, key, record, answer);
      }
      if (record.state !== 'completed') throw inProgress(deps, pending);
      res.setHeader('Idempotent-Replayed', 'true');
      res.set(replayHeaders(record, now));
      res.status(record.status_code ?? 200).json(record.body);
      return;
    }

    // We own the key: store the outcome before the response leaves, so a retry that arrives
    // right after it sees the stored result, never a stale claim.
    // Nothing else hooks res.json (production): the answer is serialised once, stored and written
    // as those bytes (http/json-response.ts); with a hook (the response checks of tests), it goes through it.
    const hooked = Object.hasOwn(res, 'json');
    const send = res.json.bind(res);
    res.json = (body: unknown) => {
      const status = res.statusCode;
      const headers: Record<string, string> = {};
      for (const h of REPLAYED_HEADERS) {
        const v = res.getHeader(h);
        if (v !== undefined) headers[h] = String(v);
      }
      const text = !hooked && body !== undefined && status !== 204 && status !== 304 && res.getHeader('content-type') === undefined ? JSON.stringify(body) : undefined;
      const settle =
        status >= 500
          ? release(deps, projectId, key, resolver, req.requestId)
          : status < 300 && req.idempotencyAnswered
            ? Promise.resolve()
            : completeBatched(deps.db.sql, projectId, key, status, body, Object.keys(headers).length ? headers : null, text);
      settle
        .catch((e) => deps.logger.error('idempotency: could not settle key', { request_id: req.requestId, error: String(e) }))
        .finally(() => (text === undefined ? send(body) : writeJsonText(req, res, status, text)));
      return res;
    };
    req.idempotencyKey = key;
    next();
  });
}

/** A 5xx: the key is released, unless work linked to it is still open (its operation decides). */
async function release(deps: AppDeps, projectId: string, key: string, resolver: PendingResolver | undefined, requestId: string): Promise<void> {
  const ref = await releaseKey(deps.db.sql, projectId, key);
  // Linked to its transaction: released only if that certainly did not commit (committed, a retry replays its answer).
  if (ref && isTransactionRef(ref)) {
    if ((await transactionOutcome(deps.db.sql, ref)) === 'aborted') await releaseLinkedKey(deps.db.sql, projectId, key, ref);
    return;
  }
  if (ref && resolver && (await resolver(deps, { projectId, ref, requestId })).state === 'gone') await releaseLinkedKey(deps.db.sql, projectId, key, ref);
}

/** The linked work has a final answer: stored, and replayed from now on. */
async function completeLinked(deps: AppDeps, projectId: string, key: string, record: Stored, answer: { status: number; body: unknown }): Promise<Stored> {
  await completeLinkedKey(deps.db.sql, projectId, key, record.send_ref!, answer.status, answer.body);
  return { ...record, state: 'completed', status_code: answer.status, body: answer.body, headers: null };
}

/**
 * A key still in progress: 409, unless the database cannot confirm writes now (a commit was cancelled
 * for want of a synchronous standby a moment ago). Then the claim is most likely one whose request
 * already failed that way and whose release waits for the same standby: 503 with Retry-After, the
 * answer of every write meanwhile, not a 409 that would repeat until a standby returns (issue 71).
 */
function inProgress(deps: AppDeps, message: string): ApiError {
  return writesUnconfirmedRefusal(deps.db.commits) ?? new ApiError('idempotency_in_progress', message);
}
