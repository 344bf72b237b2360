/**
 * The send ledger's unknown-outcome rule as a job module: a recurring `send-settle` job (one runner
 * at a time) makes final `unknown` every send whose answer was lost and that no status named
 * within the bound (SEND_UNKNOWN_AFTER_SECONDS; lib/messaging/ledger.ts, settleUnknown). The rows
 * are the truth: a run can be missed, repeated or made by another instance; each message is
 * settled once (its status moves from `pending` only).
 */
import { onPool, type JobContext, type JobDeps, type JobModule } from './context.js';
import { settleUnknown } from '../lib/messaging/ledger.js';

export const SEND_SETTLE_JOB = 'send-settle';
const BATCH = 1000;

/** One pass: settles every send past the bound, in batches; answers how many it settled. */
export async function settleLostSends(deps: Pick<JobDeps, 'db' | 'clock' | 'config'>): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await settleUnknown(deps.db.sql, { boundMs: deps.config.sendUnknownAfterMs, now: deps.clock.now(), limit: BATCH });
    total += n;
    if (n < BATCH) return total;
  }
}

export function registerSendSettle(ctx: JobContext): JobModule {
  const deps = { ...ctx.deps, db: onPool(ctx.deps.db, ctx.pool) };
  ctx.runner.define(SEND_SETTLE_JOB, async () => {
    const n = await settleLostSends(deps);
    if (n > 0) ctx.deps.logger.warn('sends settled as unknown: no status came within the bound', { count: n, bound_s: ctx.deps.config.sendUnknownAfterMs / 1000 });
  }, { concurrency: 1, removeOnComplete: false });
  return {
    async start() {
      await ctx.runner.every(ctx.deps.config.sendSettleEveryMs, SEND_SETTLE_JOB);
    },
  };
}
