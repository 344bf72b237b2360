/**
 * A wrapper on the service's pool that sees every statement it runs: `pool.query`, Prisma's
 * queries through its driver adapter, and each statement of a transaction on a checked-out client
 * (BEGIN and COMMIT included), because all of them end in one pooled client's `query`. Named
 * statements are listed by name, others by their first 60 characters.
 */
import type pg from 'pg';
import { type TestApp, useTestApp } from './app.js';

type Query = (...args: unknown[]) => unknown;
const WRAPPED = Symbol('statement counter');

export interface StatementCounter {
  /** The statements run while `run` runs (by name, else the start of the text). */
  during(run: () => Promise<unknown>): Promise<string[]>;
}

function label(q: unknown): string {
  if (typeof q === 'string') return q.replace(/\s+/g, ' ').trim().slice(0, 60);
  const c = q as { name?: string; text?: string } | undefined;
  return c?.name ?? (c?.text ?? String(q)).replace(/\s+/g, ' ').trim().slice(0, 60);
}

/** Counts on `pool` and on the pools its `query` routes to (Database.plansOnce). */
export function countStatements(...pools: Array<pg.Pool | undefined>): StatementCounter {
  let seen: string[] | undefined;
  const wrap = (client: pg.PoolClient) => {
    const c = client as unknown as { query: Query; [WRAPPED]?: true };
    if (c[WRAPPED]) return;
    c[WRAPPED] = true;
    const original = c.query;
    c.query = function (this: unknown, ...args: unknown[]) {
      seen?.push(label(args[0]));
      return original.apply(this, args);
    };
  };
  for (const pool of pools) {
    if (!pool) continue;
    pool.on('connect', wrap);
    // Connections opened before the counter: the pool's own list (pg-pool keeps every client there).
    for (const client of (pool as unknown as { _clients: pg.PoolClient[] })._clients ?? []) wrap(client);
  }
  return {
    async during(run) {
      const mine: string[] = [];
      seen = mine;
      try {
        await run();
      } finally {
        seen = undefined;
      }
      return mine;
    },
  };
}

/** A test app for the file (a simulator that sends nothing of its own) whose pools' statements `counter` sees. */
export function useCountedTestApp(started: (t: TestApp, counter: StatementCounter) => void): void {
  useTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } }, (t) => started(t, countStatements(t.db.pool, t.db.plansOnce)));
}
