/**
 * One delivery attempt, start to finish: hold the delivery (a fresh claim from the fan-out, a
 * renewed one if it waited long in the queue, or a new claim), build the body
 * `{ id, event, created_at, webhook_id, data }` and sign exactly those bytes, POST it, then hand
 * the outcome to the batch writer with the spec's rules: a 2xx succeeds; a failure is retried
 * after the policy's backoff until the fifth attempt, after which the event is dropped and counts
 * as one failed event for the registration. Only the HTTP exchange holds the registration's
 * concurrency slot; the outcome is written in the next batch.
 * The attempt was counted when the delivery was claimed (claims.ts): at shutdown, a claim not yet
 * posted is given back uncounted, and an attempt cut off in flight is recorded as a failure.
 */
import type { Clock } from '../platform/clock.js';
import type { Logger } from '../platform/logger.js';
import type { SecretBox } from '../platform/crypto-box.js';
import { signatureHeader } from './signature.js';
import { webhookSecretPlace } from './secret-place.js';
import { postWebhook, type AgentPool, type AttemptResult } from './http-post.js';
import { retryDelayMs, type DeliveryPolicy } from './policy.js';
import { cancelIfOrphaned, claimDelivery, releaseClaims, renewClaim, type ClaimedDelivery, type OutcomeKind, type RecordedOutcome } from './store.js';
import type { OutcomeWriter } from './outcomes.js';
import type { WorkItem } from './dispatcher.js';
import { CUT_AT_SHUTDOWN } from './claims.js';
import type { Tx } from '../platform/db/tx.js';

export const USER_AGENT = 'Service-Webhooks/1.0';

export interface DeliveryItem extends WorkItem {
  /** Present when the fan-out just created (and claimed) the delivery. */
  claim?: ClaimedDelivery;
}

export interface AttemptInfo extends AttemptResult {
  deliveryId: string;
  webhookId: string;
  attempt: number;
  kind: OutcomeKind;
  /** When the event happened (the delivery lag runs from here). */
  eventCreatedAt: Date;
}

export interface AttemptContext {
  /** The engine's background pool as the handle: claims, renewals and give-backs are one statement each. */
  sql: Tx;
  /** Stamps records and signatures. */
  clock: Clock;
  /** Schedules: leases and retry times (wall-clock time, as the job runner's). */
  timer: Clock;
  secretBox: SecretBox;
  policy: DeliveryPolicy;
  allowPrivate: boolean;
  agents: AgentPool;
  logger: Logger;
  outcomes: OutcomeWriter;
  /** Aborted at shutdown: a claim not yet posted is given back; an attempt still in flight is cut off and recorded as failed. */
  signal?: AbortSignal;
  /** When each registration last changed (timer ms), as announced; claims older than that are re-read. */
  changes: Map<string, number>;
  onAttempt?(info: AttemptInfo): void;
}

export function deliveryBody(d: { id: string; event: string; eventCreatedAt: Date; webhookId: string; dataJson: string }): string {
  return (
    `{"id":${JSON.stringify(d.id)},"event":${JSON.stringify(d.event)},` +
    `"created_at":${JSON.stringify(d.eventCreatedAt.toISOString())},"webhook_id":${JSON.stringify(d.webhookId)},"data":${d.dataJson}}`
  );
}

/** Opened signing secrets by sealed value (a registration's secret never changes), bounded. */
const secrets = new Map<string, string>();
function openSecret(box: SecretBox, sealed: string, webhookId: string): string {
  let secret = secrets.get(sealed);
  if (secret === undefined) {
    secret = box.open(sealed, webhookSecretPlace(webhookId));
    if (secrets.size >= 1000) secrets.delete(secrets.keys().next().value as string);
    secrets.set(sealed, secret);
  }
  return secret;
}

/** The delivery, held by us for at least one full attempt; undefined when it is not ours to attempt. */
async function hold(ctx: AttemptContext, item: DeliveryItem): Promise<ClaimedDelivery | undefined> {
  const now = ctx.timer.now();
  const leaseUntil = new Date(now.getTime() + ctx.policy.leaseMs);
  if (item.claim) {
    // A concurrent extension changes the lease this renewal would match on: wait for it first.
    if (item.claim.extending) await item.claim.extending.catch(() => undefined);
    // The claim is used as is unless its registration changed since it was made (new URL,
    // disabled, deleted) or its lease could lapse during the attempt: then it is renewed, which
    // re-reads the registration and checks that the delivery is still pending.
    const claimedAt = item.claim.claimedAt?.getTime() ?? item.claim.leaseUntil.getTime() - ctx.policy.leaseMs;
    const changedAt = ctx.changes.get(item.webhookId);
    const stale = item.claim.extended === true || (changedAt !== undefined && changedAt >= claimedAt);
    const spare = item.claim.leaseUntil.getTime() - now.getTime();
    return !stale && spare > ctx.policy.attemptTimeoutMs + 2000 ? item.claim : renewClaim(ctx.sql, item.id, item.claim.leaseUntil, leaseUntil);
  }
  return claimDelivery(ctx.sql, item.id, now, leaseUntil);
}

/**
 * Resolves once the receiver has answered (or the attempt failed) and its outcome is queued for
 * writing: the registration's concurrency slot is then free while the outcome is written in the
 * next batch. `written` settles when it is committed.
 */
export async function attemptDelivery(ctx: AttemptContext, item: DeliveryItem): Promise<{ written: Promise<RecordedOutcome | undefined> } | undefined> {
  const claimed = await hold(ctx, item);
  if (!claimed) {
    // Not due, taken by another worker, finished, or its registration is gone or disabled.
    await cancelIfOrphaned(ctx.sql, item.id, ctx.clock.now());
    return undefined;
  }
  const attempt = claimed.attempt;
  if (ctx.signal?.aborted) {
    // Stopping before the POST: the attempt was not made, so it does not count.
    await releaseClaims(ctx.sql, [claimed], ctx.timer.now()).catch((e) =>
      ctx.logger.warn('webhook claim could not be given back; it is retaken after its lease', { delivery_id: item.id, error: String(e) }),
    );
    return undefined;
  }
  const body = deliveryBody(claimed);
  let result: AttemptResult;
  try {
    const secret = openSecret(ctx.secretBox, claimed.secretEnc, claimed.webhookId);
    const t = Math.floor(ctx.clock.now().getTime() / 1000);
    result = await postWebhook(
      claimed.url,
      body,
      {
        'Content-Type': 'application/json',
        'User-Agent': USER_AGENT,
        'X-Service-Event': claimed.event,
        'X-Service-Signature': signatureHeader(secret, t, body),
      },
      { timeoutMs: ctx.policy.attemptTimeoutMs, allowPrivate: ctx.allowPrivate, bodyCap: ctx.policy.responseBodyCap, agents: ctx.agents, signal: ctx.signal },
    );
  } catch (e) {
    ctx.logger.error('webhook attempt could not be made', { delivery_id: item.id, error: e instanceof Error ? e.message : String(e) });
    result = { ok: false, statusCode: null, error: 'internal error before sending', durationMs: 0 };
  }
  // Cut off at shutdown: the receiver may have the request, so the attempt counts as a failure.
  if (ctx.signal?.aborted && !result.ok) result = { ...result, error: CUT_AT_SHUTDOWN };
  const delay = result.ok ? null : retryDelayMs(ctx.policy, attempt);
  const kind: OutcomeKind = result.ok ? 'success' : delay === null ? 'dropped' : 'retry';
  ctx.onAttempt?.({ ...result, deliveryId: item.id, webhookId: claimed.webhookId, attempt, kind, eventCreatedAt: claimed.eventCreatedAt });
  await ctx.outcomes.room();
  const written = ctx.outcomes.record({
    deliveryId: item.id,
    webhookId: claimed.webhookId,
    attempt,
    kind,
    statusCode: result.statusCode,
    error: result.ok ? null : result.error,
    durationMs: result.durationMs,
    responseExcerpt: result.excerpt ?? null,
    at: ctx.clock.now(),
    nextAttemptAt: delay === null ? null : new Date(ctx.timer.now().getTime() + delay),
  });
  // A write that fails leaves the delivery claimed; it is retaken after its lease.
  written.catch(() => undefined);
  return { written };
}
