/**
 * The sending engine: `scheduled` → `sending` → `completed` (or `canceled`, `failed`).
 *
 * - A periodic job (jobs/broadcast-engine.ts, on Agenda) calls `tick()`: it takes the
 *   broadcast-level lease of each campaign that is due (scheduled and its time has come; sending
 *   with work and no live lease), so two schedulers never run one campaign, and starts a runner
 *   for it here. A runner renews its lease before every batch; a crashed engine's lease runs out
 *   and another engine resumes from the rows (never from a job payload).
 * - A runner claims recipients in batches (recipients.ts for the exactly-once rules), reserves
 *   their daily-quota units, records their messages, takes sending slots from the number's shared
 *   token bucket (pacing.ts), then sends the batch with bounded concurrency.
 * - Waves: a campaign with `wave_size` queues its first wave at approval and holds the rest; when
 *   `wave_scheduled_at` comes (business clock), the next `wave_scheduled_count` (or all) held
 *   recipients are queued.
 * - Retargeting (retarget.ts) runs from the same tick.
 * Business times (started_at, waves, retarget, the quota's day) come from `clock`; leases, pacing
 * and backoffs from `timer` (wall clock), so tests can move business time without sleeping.
 */
import { queryRows, type Tx } from '../platform/db/tx.js';
import type { Deps } from '../deps.js';
import type { Clock } from '../platform/clock.js';
import { openChannel, type OpenChannel } from '../channel-settings/settings.js';
import { isChannelError } from '../channel-port/errors.js';
import type { OutboundMessage, TemplateComponent } from '../channel-port/messages.js';
import { abandonIntents, confirmIntents, nextUtcMidnight, recordIntents, releaseUnits, reserveUnits } from '../messaging/ledger.js';
import { pacingSettings, takeSlots, throttled, type PacingSettings } from './pacing.js';
import { categoryOf, failureOf, MAX_ATTEMPTS, outcomeOf, sendRouteOf } from './send-errors.js';
import {
  cancelOptedOutClaims, cancelOptedOutWaiting, cancelUnsent, claimBatch, extendClaims, holdForLimit, markSent, queueNextWave, markUnknown, recoverStale, settleFailure, unclaim, type ClaimedRecipient,
} from './recipients.js';
import type { BroadcastRow } from './store.js';
import { spawnDueRetargets } from './retarget.js';
import { templateShapeOf, type TemplateShape } from './template-shape.js';
import {
  leaseDueCampaigns, markCompleted, markFailed, parkCampaign, releaseLease, renewLease, scheduleNextWave, setStatusReason, startSending,
} from './campaigns.js';
import { optOutOnSendError } from '../conversations/contact-store.js';
import { LIMIT_HOLD_PREFIX, limitHoldReason, QUOTA_HOLD_PREFIX, quotaHoldReason } from './quota-hold.js';
import { portfolioLimit, reachKey, reserveReach } from '../pricing/portfolio-reach.js';
import { portOf } from '../channel-port/capabilities.js';

export interface EngineOptions {
  owner: string;
  /** Wall-clock time for leases, pacing and backoffs. */
  timer: Clock;
  leaseMs?: number;
  /** Sends in flight per campaign. */
  concurrency?: number;
  /** Largest batch claimed at once. */
  maxBatch?: number;
  pacing?: Partial<PacingSettings>;
  /** Batches claimed ahead while earlier ones are still sending (default DEFAULT_PIPELINE). */
  pipeline?: number;
  /** Waits between checks while a campaign waits for backoffs (ms). */
  idleMs?: number;
  /** How often a campaign held by the portfolio's messaging limit looks again (wall clock; default 30 s). */
  limitRecheckMs?: number;
}

/**
 * Batches in flight per campaign. Each sends its chunks in turn, so a crash leaves at most one chunk
 * per batch in flight recorded but never called (when the engine runs behind its pace, the batches'
 * chunks overlap).
 */
export const DEFAULT_PIPELINE = 3;

type EngineDeps = Pick<Deps, 'db' | 'clock' | 'logger' | 'secretBox' | 'channel'>;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

export class BroadcastEngine {
  private readonly running = new Map<string, Promise<void>>();
  private stopped = false;
  readonly leaseMs: number;
  readonly settings: PacingSettings;
  /** The pool as the one handle (the ledger, pacing and the portfolio's reach take it). */
  private readonly sql: Tx;
  private readonly unknownLimitLogged = new Set<string>();
  /** Per campaign: its template's card header formats and COPY_CODE button index (newerKindComponents). */
  private readonly templateShapes = new Map<string, TemplateShape>();

  constructor(private readonly deps: EngineDeps, private readonly opts: EngineOptions) {
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.settings = pacingSettings(opts.pacing);
    this.sql = deps.db.sql;
  }

  /** Campaigns running in this engine now. */
  get active(): string[] {
    return [...this.running.keys()];
  }

  /** One scheduling pass: start runners for due campaigns, spawn due retargets. */
  async tick(): Promise<void> {
    if (this.stopped) return;
    const now = this.deps.clock.now();
    const t = this.opts.timer.now();
    const ids = await leaseDueCampaigns(this.sql, this.opts.owner, now, t, new Date(t.getTime() + this.leaseMs));
    for (const id of ids) {
      if (this.running.has(id)) continue;
      const run = this.run(id)
        .catch((e) => {
          this.deps.logger.error('broadcast runner failed', { broadcast_id: id, error: e instanceof Error ? e.stack ?? e.message : String(e) });
        })
        .finally(() => this.running.delete(id));
      this.running.set(id, run);
    }
    await spawnDueRetargets(this.deps.db, now);
  }

  /** Stops taking work; runners finish their batch in flight and release their leases. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled([...this.running.values()]);
  }

  /** Waits until no campaign runs here (tests). */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running.values()]);
  }

  private renew(id: string): Promise<BroadcastRow | undefined> {
    return renewLease(this.sql, id, this.opts.owner, new Date(this.opts.timer.now().getTime() + this.leaseMs));
  }

  private release(id: string): Promise<void> {
    return releaseLease(this.sql, id, this.opts.owner);
  }

  private async run(id: string): Promise<void> {
    let channel: OpenChannel | undefined;
    const inflight = new Set<Promise<void>>();
    let halted = false;
    try {
      while (!this.stopped && !halted) {
        let b = await this.renew(id);
        if (!b) return;
        const now = this.deps.clock.now();
        if (b.status === 'scheduled') b = await this.start(b, now);
        if (b.wave_scheduled_at && b.wave_scheduled_at <= now) await this.releaseWave(b, now);
        if (b.status_reason?.startsWith(QUOTA_HOLD_PREFIX)) {
          await setStatusReason(this.sql, id, null);
        }
        await recoverStale(this.sql, id, b.project_id, this.opts.timer.now());
        channel ??= await openChannel(this.deps, b.project_id);
        if (!channel) {
          await this.fail(b, 'The project has no channel configured.', now);
          return;
        }
        const prepared = await this.batch(b, channel);
        if (typeof prepared === 'function') {
          // Sending runs in the background while the next batch is claimed and paced: up to
          // `pipeline` batches in flight, so the channel is never idle between batches.
          const p: Promise<void> = prepared().then(
            (halt) => {
              if (halt) halted = true;
            },
            (e) => {
              // Its claims stay leased and are recovered from the rows once the lease runs out.
              this.deps.logger.error('broadcast batch failed', { broadcast_id: id, error: e instanceof Error ? e.message : String(e) });
            },
          ).finally(() => inflight.delete(p));
          inflight.add(p);
          if (inflight.size >= (this.opts.pipeline ?? DEFAULT_PIPELINE)) await Promise.race(inflight);
          if (halted) break;
          continue;
        }
        if (prepared === 'finished' || prepared === 'parked') {
          if (inflight.size === 0) return;
          await Promise.all(inflight);
          continue;
        }
        if (prepared === 'idle') await (inflight.size ? Promise.race([...inflight, sleep(this.opts.idleMs ?? 200)]) : sleep(this.opts.idleMs ?? 200));
      }
      await Promise.all(inflight);
    } finally {
      await Promise.allSettled(inflight);
      await this.release(id).catch(() => undefined);
    }
  }

  private async start(b: BroadcastRow, now: Date): Promise<BroadcastRow> {
    const started = await startSending(this.sql, b.id, now);
    if (started) await cancelOptedOutWaiting(this.sql, b.id, now);
    return started ?? b;
  }

  /** Queues the next wave of held recipients; schedules the one after while any stay held. */
  async releaseWave(b: BroadcastRow, now: Date): Promise<void> {
    const stillHeld = await queueNextWave(this.sql, b.id, b.wave_scheduled_count, now);
    await scheduleNextWave(this.sql, b.id, stillHeld, now);
    await cancelOptedOutWaiting(this.sql, b.id, now);
  }

  /** The campaign stops as failed with the reason (status first, so no engine takes up its rows), then its unsent recipients are canceled. */
  private async fail(b: BroadcastRow, reason: string, now: Date): Promise<void> {
    await markFailed(this.sql, b.id, reason, now);
    await cancelUnsent(this.sql, b.id, now);
  }

  /**
   * Claims, reserves and paces one batch; answers its sending as a function to run (which answers
   * true when the campaign had to stop), or why there is nothing to send: wait, parked (waves,
   * quota) or finished.
   */
  private async batch(b: BroadcastRow, channel: OpenChannel): Promise<(() => Promise<boolean>) | 'idle' | 'parked' | 'finished'> {
    const rate = (await queryRows<{ rate: number }>(
      this.sql,
      'SELECT LEAST(throughput * $2::float8, current_rate) AS rate FROM broadcast_pacing WHERE phone_number_id = $1',
      channel.phoneNumberId, this.settings.share,
    ))[0]?.rate ?? this.settings.defaultThroughput * this.settings.share;
    const size = Math.max(1, Math.min(this.opts.maxBatch ?? 500, Math.ceil(Number(rate) / 2)));
    const t = this.opts.timer.now();
    const now = this.deps.clock.now();
    const claimed = await claimBatch(this.sql, b.id, this.opts.owner, size, t, new Date(t.getTime() + this.leaseMs), now);
    if (claimed.length === 0) return this.whenEmpty(b, now);

    const { granted } = await reserveUnits(this.sql, b.project_id, claimed.length, now, null, true);
    if (granted < claimed.length) {
      const held = claimed.splice(granted);
      await unclaim(this.sql, held.map((r) => r.id), this.opts.owner, t, null);
      if (granted === 0) {
        // The daily quota is used: the rest waits (queued, not failed) for the next UTC day.
        const resume = nextUtcMidnight(now);
        await parkCampaign(this.sql, b.id, new Date(t.getTime() + (resume.getTime() - now.getTime())), { reason: quotaHoldReason(resume) });
        return 'parked';
      }
    }

    if (!(await this.withinLimit(b, channel, claimed, now))) return 'idle';

    const content = (r: ClaimedRecipient) => ({
      type: 'template',
      template: { name: b.template_name, language: b.template_language, variables: r.variables.body ?? [] },
      broadcast_id: b.id,
    });
    const slots = await takeSlots(this.sql, channel.phoneNumberId, claimed.length, this.opts.timer.now(), this.settings);
    return async () => this.sendBatch(b, channel, claimed, content, now, slots);
  }

  private async sendBatch(
    b: BroadcastRow, channel: OpenChannel, claimed: ClaimedRecipient[], content: (r: ClaimedRecipient) => unknown, now: Date,
    slots: { at: Date; rate: number },
  ): Promise<boolean> {
    // Chunks of `concurrency`: each chunk's messages are recorded, then all of its calls go out at
    // once, so a crash leaves a recorded intent only for a call that was (or was about to be) made.
    const sent: Array<{ id: string; ref: string; wamid: string }> = [];
    let stop: string | undefined;
    // Chunks are spread over the batch's slots (a tenth of a second of the rate each), so no
    // second ever carries more than the rate.
    const chunk = Math.max(1, Math.min(this.opts.concurrency ?? 50, Math.ceil(slots.rate / 10)));
    for (let i = 0; i < claimed.length; i += chunk) {
      const part = claimed.slice(i, i + chunk);
      await sleep(slots.at.getTime() + (i / slots.rate) * 1000 - this.opts.timer.now().getTime());
      if (stop) {
        // Never called and never recorded: back to the queue; the verdict below cancels them.
        await unclaim(this.sql, part.map((r) => r.id), this.opts.owner, this.opts.timer.now(), null);
        await releaseUnits(this.sql, b.project_id, part.length, now);
        continue;
      }
      // Still ours? An engine that stalled past its lease (another took the rows over) sends nothing more.
      const held = await extendClaims(this.sql, part.map((r) => ({ id: r.id, ref: r.send_ref })), this.opts.owner, new Date(this.opts.timer.now().getTime() + this.leaseMs));
      // A contact who opted out since approval is skipped (canceled with the reason), never sent.
      const sendable = await cancelOptedOutClaims(this.sql, b.id, part.filter((r) => held.has(r.id)).map((r) => r.id), this.opts.owner, now);
      const mine = part.filter((r) => sendable.has(r.id));
      await releaseUnits(this.sql, b.project_id, part.length - mine.length, now);
      if (!mine.length) continue;
      // Built before the intents are recorded: between a record's commit and its call nothing waits
      // on the database, so a crash there leaves as few recorded-but-never-called sends as it can.
      const messages = await Promise.all(mine.map((r) => this.messageFor(b, r)));
      await recordIntents(this.sql, b.project_id, mine.map((r) => ({ to: { phone: r.phone, userId: r.user_id }, ref: r.send_ref, type: 'template', content: content(r) })), now);
      const outcomes = await Promise.all(mine.map((r, k) => this.sendOne(b, channel, r, messages[k], now)));
      for (const o of outcomes) {
        if (typeof o === 'string') stop ??= o;
        else if (o) sent.push(o);
      }
    }
    const at = this.deps.clock.now();
    await confirmIntents(this.sql, b.project_id, sent.map((s) => ({ ref: s.ref, wamid: s.wamid, at })));
    await markSent(this.sql, this.opts.owner, sent, at);
    if (stop) {
      await this.fail(b, stop, this.deps.clock.now());
      return true;
    }
    return false;
  }


  /**
   * A limited-time offer's expiry and code, and a carousel's cards (each card's header link from
   * the campaign, typed by the template's card header format; its body from the recipient's
   * variables). The template's shape is read once per campaign.
   */
  private async newerKindComponents(b: BroadcastRow, r: ClaimedRecipient): Promise<Array<Record<string, unknown>>> {
    const v = b.template_variables;
    if (!v.cards?.length && !v.limited_time_offer && !v.coupon_code) return [];
    let shape = this.templateShapes.get(b.id);
    if (!shape) {
      shape = await templateShapeOf(this.sql, b.project_id, b.template_name, b.template_language);
      this.templateShapes.set(b.id, shape);
    }
    const out: Array<Record<string, unknown>> = [];
    if (v.limited_time_offer) out.push({ type: 'limited_time_offer', parameters: [{ type: 'limited_time_offer', limited_time_offer: { expiration_time_ms: v.limited_time_offer.expiration_time_ms } }] });
    if (v.coupon_code && shape.copyCodeIndex >= 0) out.push({ type: 'button', sub_type: 'copy_code', index: String(shape.copyCodeIndex), parameters: [{ type: 'coupon_code', coupon_code: v.coupon_code }] });
    if (v.cards?.length) {
      out.push({
        type: 'carousel',
        cards: v.cards.map((card, i) => {
          const kind = shape!.cardFormats[i] ?? 'image';
          const body = r.variables.cards?.[i]?.body ?? [];
          return {
            card_index: i,
            components: [
              { type: 'header', parameters: [{ type: kind, [kind]: { link: card.header?.link } }] },
              ...(body.length ? [{ type: 'body', parameters: body.map((text) => ({ type: 'text', text })) }] : []),
            ],
          };
        }),
      });
    }
    return out;
  }

  /** The campaign's template message to one recipient, with the recipient's variables. */
  private async messageFor(b: BroadcastRow, r: ClaimedRecipient): Promise<OutboundMessage> {
    const components: Array<Record<string, unknown>> = [];
    if (r.variables.header?.length) components.push({ type: 'header', parameters: r.variables.header.map((text) => ({ type: 'text', text })) });
    if (r.variables.body?.length) components.push({ type: 'body', parameters: r.variables.body.map((text) => ({ type: 'text', text })) });
    components.push(...(await this.newerKindComponents(b, r)));
    return {
      recipient: { kind: 'customer', phone: r.phone, userId: r.user_id },
      content: {
        type: 'template',
        template: { name: b.template_name, language: { policy: 'deterministic', code: b.template_language }, ...(components.length ? { components: components as unknown as TemplateComponent[] } : {}) },
      },
      reference: r.send_ref,
    };
  }

  /** One send; answers the accepted send, nothing (handled), or a reason to stop the campaign. */
  private async sendOne(
    b: BroadcastRow, channel: OpenChannel, r: ClaimedRecipient, message: OutboundMessage, day: Date,
  ): Promise<{ id: string; ref: string; wamid: string } | string | undefined> {
    try {
      const { channelMessageId: wamid } = await portOf(this.deps, channel).sendMessage(channel, message, sendRouteOf(b));
      return { id: r.id, ref: r.send_ref, wamid };
    } catch (e) {
      const t = this.opts.timer.now();
      if (!isChannelError(e)) throw e;
      if (e.outcomeUnknown) {
        // Maybe sent: never sent again; its statuses (which echo the reference) settle it.
        await markUnknown(this.sql, { id: r.id, ref: r.send_ref }, this.opts.owner, t);
        return undefined;
      }
      // The user stopped marketing messages: the contact opts out (never retried).
      await optOutOnSendError(this.sql, b.project_id, { phone: r.phone, userId: r.user_id }, e, t);
      const outcome = outcomeOf(e, b.route);
      const failure = failureOf(e, b.route);
      // Certainly not sent: the ledger drops the message and gives its unit back, then the
      // recipient is queued again or failed.
      await abandonIntents(this.sql, b.project_id, [r.send_ref], day);
      const claim = { id: r.id, ref: r.send_ref };
      const fail = (category: string) =>
        settleFailure(this.sql, this.opts.owner, claim, t, { code: failure.code, category, title: failure.title, reason: failure.reason });
      if (outcome === 'throttle') {
        await throttled(this.sql, channel.phoneNumberId, t);
        await settleFailure(this.sql, this.opts.owner, claim, t, { retryAt: new Date(t.getTime() + 1000) });
      } else if (outcome === 'pair' || outcome === 'retry') {
        if (r.attempts >= MAX_ATTEMPTS) await fail('retryable');
        else {
          const base = outcome === 'pair' ? 6000 : 1000;
          await settleFailure(this.sql, this.opts.owner, claim, t, { retryAt: new Date(t.getTime() + base * 2 ** (r.attempts - 1)) });
        }
      } else if (outcome === 'stop') {
        await fail(categoryOf(outcome));
        return `The channel refused the campaign: ${e.code ? `(#${e.code}) ` : ''}${failure.reason ? failure.title : e.title ?? e.message}`.slice(0, 500);
      } else {
        await fail(categoryOf(outcome));
      }
      return undefined;
    }
  }

  /**
   * The portfolio's messaging limit (lib/pricing/portfolio-reach.ts): the claimed recipients
   * that fit are reserved and kept in `claimed`; the rest go back, held with the reason until the
   * window frees room, and so does every queued recipient of the campaign. Answers whether any
   * claim is left to send. An unknown limit leaves pacing alone in charge (logged once per number).
   */
  private async withinLimit(b: BroadcastRow, channel: OpenChannel, claimed: ClaimedRecipient[], now: Date): Promise<boolean> {
    const limit = await portfolioLimit(this.sql, channel.phoneNumberId);
    if (limit.state === 'unknown') {
      if (!this.unknownLimitLogged.has(channel.phoneNumberId)) {
        this.unknownLimitLogged.add(channel.phoneNumberId);
        this.deps.logger.warn(`messaging limit of number ${channel.phoneNumberId} is unknown: campaigns are held by pacing alone`, { broadcast_id: b.id });
      }
      return true;
    }
    this.unknownLimitLogged.delete(channel.phoneNumberId);
    if (limit.limit === null) return true;
    const { granted, releaseAt } = await reserveReach(this.deps.db, channel.wabaId, limit.limit, claimed.map(reachKey), now);
    const over = claimed.filter((r) => !granted.has(reachKey(r)));
    if (!over.length) {
      // The reason goes once nothing of the campaign waits for the window any more.
      if (b.status_reason?.startsWith(LIMIT_HOLD_PREFIX) && !(await this.limitHeld(b.id, now))) await this.setReason(b.id, null);
      return true;
    }
    await releaseUnits(this.sql, b.project_id, over.length, now);
    await holdForLimit(this.sql, b.id, over.map((r) => r.id), this.opts.owner, channel.wabaId, releaseAt!, now, this.opts.timer.now());
    await this.setReason(b.id, limitHoldReason(limit.limit, releaseAt!));
    claimed.splice(0, claimed.length, ...claimed.filter((r) => granted.has(reachKey(r))));
    return claimed.length > 0;
  }

  private async limitHeld(id: string, now: Date): Promise<boolean> {
    const rows = await queryRows(
      this.sql,
      `SELECT 1 FROM broadcast_recipients WHERE broadcast_id = $1 AND state = 'queued' AND limit_held_until > $2 LIMIT 1`,
      id, now,
    );
    return rows.length > 0;
  }

  private setReason(id: string, reason: string | null): Promise<void> {
    return setStatusReason(this.sql, id, reason);
  }

  private async whenEmpty(b: BroadcastRow, now: Date): Promise<'idle' | 'parked' | 'finished'> {
    const rows = await queryRows<{ state: string; n: bigint; until: Date | null }>(
      this.sql,
      `SELECT CASE WHEN state = 'queued' AND limit_held_until > $2 THEN 'limit_held' ELSE state END AS state, count(*)::bigint AS n,
              min(limit_held_until) AS until
       FROM broadcast_recipients WHERE broadcast_id = $1 AND state IN ('queued', 'sending', 'held') GROUP BY 1`,
      b.id, now,
    );
    const n = Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
    if ((n.queued ?? 0) > 0 || (n.sending ?? 0) > 0) return 'idle';
    const limitHeld = rows.find((r) => r.state === 'limit_held');
    if (limitHeld) {
      // Parked without an owner until the window may have room: the tick takes it up again then
      // (or sooner, to see a raised limit or a wave that came due).
      const wait = Math.min(limitHeld.until!.getTime() - now.getTime(), this.opts.limitRecheckMs ?? 30_000);
      await parkCampaign(this.sql, b.id, new Date(this.opts.timer.now().getTime() + Math.max(0, wait)), { owner: this.opts.owner });
      return 'parked';
    }
    if ((n.held ?? 0) > 0) return 'parked';
    await markCompleted(this.sql, b.id, now, LIMIT_HOLD_PREFIX);
    return 'finished';
  }
}
