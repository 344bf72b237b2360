/**
 * At start, PostgreSQL may not answer yet (a compose file starting everything at once, a managed
 * database restarting). Policy: try every second for up to `waitSeconds`, saying once and then every
 * 10 s what is awaited and why it failed; the HTTP server is not listening meanwhile, so a load
 * balancer's readiness probe gets nothing and sends no traffic. Past the bound the start fails with
 * the last reason (0 = a single try, as before).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { checkReachable } from './database.js';

export async function waitForDatabase(url: string, opts: { waitSeconds: number; logger: { warn(m: string): void; info(m: string): void } }): Promise<void> {
  const deadline = Date.now() + opts.waitSeconds * 1000;
  let lastSaid = 0;
  let waited = false;
  for (;;) {
    try {
      await checkReachable(url, 2000);
      if (waited) opts.logger.info('PostgreSQL answers: starting');
      return;
    } catch (e) {
      if (Date.now() >= deadline) throw e;
      if (Date.now() - lastSaid >= 10_000) {
        opts.logger.warn(`waiting for PostgreSQL (up to DATABASE_WAIT_SECONDS=${opts.waitSeconds}): ${(e as Error).message}`);
        lastSaid = Date.now();
      }
      waited = true;
      await sleep(1000);
    }
  }
}
