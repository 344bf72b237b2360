/** What a background job module is given when it registers on the service's one job runner. */
import pg from 'pg';
import { routeGenericPlans, type Database } from '../lib/platform/db/database.js';
import { pgTx } from '../lib/platform/db/tx.js';
import type { Deps } from '../lib/deps.js';
import type { JobRunner } from './runner.js';

export type JobDeps = Pick<Deps, 'db' | 'clock' | 'logger' | 'secretBox' | 'config' | 'channel' | 'channels'>;

export interface JobContext {
  deps: JobDeps;
  /** The one runner: modules define their jobs on it before it starts. */
  runner: JobRunner;
  /** The background pool: its own connections, so background bursts cannot starve API requests. */
  pool: pg.Pool;
}

/** A module's part in the runner's life: started after the runner, stopped around it. */
export interface JobModule {
  /** After the runner started (recurring jobs, listeners). */
  start?(): Promise<void>;
  /** Before the runner stops: take no new work. */
  stopIntake?(): Promise<void>;
  /** After the runner stopped: finish or cut off work in flight. */
  drain?(): Promise<void>;
}

/** The database as a background module sees it: its pool, and the handle (`sql`) on that pool, not the API's. */
export function onPool(db: Database, pool: pg.Pool): Database {
  return { ...db, pool, sql: pgTx(pool) };
}

/** A pool of its own for background work, with the API pool's settings and every connection's errors heard. */
export function backgroundPool(deps: Pick<JobDeps, 'db' | 'logger'>, size: number): pg.Pool {
  const { logger } = deps;
  const options = (deps.db.pool as unknown as { options: pg.PoolConfig }).options;
  const pool = new pg.Pool({ ...options, max: size });
  // The statements planned once (the webhook claim, the orphan check) on connections of their own.
  const { options: _main, ...settings } = options;
  const plansOnce = routeGenericPlans(pool, { ...settings, max: Math.max(1, Math.ceil(size / 4)) });
  for (const p of [pool, plansOnce]) {
    p.on('error', (e) => logger.warn('background pool: idle connection error', { error: e.message }));
    // Held clients too: a reset between two queries must not be an unheard 'error' event.
    p.on('connect', (client) => client.on('error', (e) => logger.warn('background pool: connection lost while in use', { error: e.message })));
  }
  const end = pool.end.bind(pool);
  pool.end = (async () => {
    await Promise.all([end(), plansOnce.end().catch(() => undefined)]);
  }) as typeof pool.end;
  return pool;
}
