/**
 * The broadcast engine as a job module: a recurring `broadcast-tick` job (one runner at a time, on
 * the service's one job runner, jobs/index.ts) finds campaigns that are due (scheduled, a wave to
 * release, an interrupted campaign whose lease ran out, a retarget to gather) and starts their
 * runners (lib/broadcasts/engine.ts). The rows are the truth: a tick can be missed, repeated or
 * run by another instance without losing or doubling a recipient. Imports cut short by a previous
 * stop are failed with a reason when the module starts.
 */
import type { Deps } from '../lib/deps.js';
import { systemClock, type Clock } from '../lib/platform/clock.js';
import { BroadcastEngine, type EngineOptions } from '../lib/broadcasts/engine.js';
import { failInterrupted } from '../lib/contacts-import/imports.js';
import { backgroundPool, onPool, type JobContext, type JobModule } from './context.js';

export const BROADCAST_TICK_JOB = 'broadcast-tick';

export interface BroadcastEngineOptions extends Partial<Omit<EngineOptions, 'timer'>> {
  timer?: Clock;
  tickEveryMs?: number;
  /** Connections of a standalone engine's pool (startBroadcastEngine). */
  poolSize?: number;
  /** Kept for callers of the standalone engine, which never schedules: its caller drives `tick()`. */
  schedule?: boolean;
}

export interface RunningEngine {
  engine: BroadcastEngine;
  tick(): Promise<void>;
  stop(): Promise<void>;
}

type EngineDeps = Pick<Deps, 'db' | 'clock' | 'logger' | 'secretBox' | 'channel' | 'channels'>;

/**
 * A campaign's lease owner names the instance: INSTANCE_NAME when set (compose.yaml sets app1, app2:
 * in containers every node is PID 1), else the process id; a random part keeps two engines apart.
 */
function engineOwner(): string {
  return `engine-${process.env.INSTANCE_NAME || process.pid}-${Math.random().toString(36).slice(2, 8)}`;
}

/** The engine on the service's job runner: the tick is defined now and scheduled when the runner starts. */
export function registerBroadcastEngine(ctx: JobContext & { deps: EngineDeps }, opts: BroadcastEngineOptions = {}): RunningEngine & JobModule {
  const { deps, runner } = ctx;
  const db = onPool(deps.db, ctx.pool);
  const engine = new BroadcastEngine(
    { ...deps, db },
    { owner: opts.owner ?? engineOwner(), timer: opts.timer ?? systemClock, ...opts },
  );
  // Imports cut short by a crash are failed on the same tick (one recurring job for both).
  const tick = async () => {
    await engine.tick();
    await failInterrupted(db.sql, deps.clock.now());
  };
  runner.define(BROADCAST_TICK_JOB, async () => tick(), { concurrency: 1, removeOnComplete: false });
  return {
    engine,
    tick,
    async start() {
      await failInterrupted(db.sql, deps.clock.now());
      await runner.every(opts.tickEveryMs ?? 1000, BROADCAST_TICK_JOB);
    },
    async drain() {
      await engine.stop();
    },
    stop: () => engine.stop(),
  };
}

/**
 * An engine of its own, without a job runner: tests and benchmarks drive `tick()` themselves
 * (`schedule: false`), or two engines on one database stand for two instances.
 */
export async function startBroadcastEngine(deps: EngineDeps, opts: BroadcastEngineOptions = {}): Promise<RunningEngine> {
  const pool = backgroundPool(deps, opts.poolSize ?? 8);
  const engine = new BroadcastEngine(
    { ...deps, db: onPool(deps.db, pool) },
    { owner: opts.owner ?? engineOwner(), timer: opts.timer ?? systemClock, ...opts },
  );
  return {
    engine,
    tick: () => engine.tick(),
    stop: async () => {
      await engine.stop();
      await pool.end();
    },
  };
}
