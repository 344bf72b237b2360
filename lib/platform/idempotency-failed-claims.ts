/**
 * A claim whose statement failed as "database unavailable" (a commit cancelled after the commit
 * bound, a connection lost during COMMIT) may have been committed all the same: left alone, a retry
 * with the key would meet it as "in progress" (409 idempotency_in_progress) until it counts as
 * abandoned, 2 minutes later (issue 71). The request's handler never ran, so the claim is deleted
 * in the background, tried every second until the database takes it, for up to RELEASE_FOR_MS.
 * A deletion whose own commit is unconfirmed has happened on the primary: that counts as done.
 */
import { isDatabaseUnavailable } from './db/errors.js';
import { isUnconfirmedCommit, writesUnconfirmed, type CommitGuard } from './db/commit-guard.js';
import { ApiError } from './errors.js';
import type { Tx } from './db/tx.js';
import { releaseFailedClaim } from './idempotency-store.js';

/** Shorter than ABANDONED_AFTER_MS: a later takeover's claim is never the one deleted. */
const RELEASE_FOR_MS = 60_000;
/** A batch of claims is stamped with its newest request's time: this much after ours at most. */
const BATCH_SPREAD_MS = 5_000;
const EVERY_MS = 1000;

export function releaseFailedClaimLater(db: Tx, projectId: string, key: string, fingerprint: string, claimedAt: Date, onGiveUp: (e: unknown) => void): void {
  const until = Date.now() + RELEASE_FOR_MS;
  const to = new Date(claimedAt.getTime() + BATCH_SPREAD_MS);
  const attempt = () => {
    releaseFailedClaim(db, projectId, key, fingerprint, claimedAt, to).catch((e: unknown) => {
      if (isUnconfirmedCommit(e)) return;
      if (!isDatabaseUnavailable(e) || Date.now() >= until) return onGiveUp(e);
      setTimeout(attempt, EVERY_MS).unref();
    });
  };
  attempt();
}

/** The 503 a write gets while the database cannot confirm writes (a commit cancelled a moment ago for want of a synchronous standby). */
export function writesUnconfirmedRefusal(commits: CommitGuard | undefined): ApiError | undefined {
  if (!writesUnconfirmed(commits)) return undefined;
  return new ApiError('service_unavailable', "The database cannot confirm writes now (no synchronous standby): this Idempotency-Key's request is not complete. Retry later with the same key.", undefined, { 'Retry-After': '2' });
}
