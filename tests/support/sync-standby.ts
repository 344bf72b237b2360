/** Commits that wait for a synchronous standby: the setting the commit-stall proofs turn on and off. */
import { rm } from 'node:fs/promises';
import type pg from 'pg';

/** Sets `synchronous_standby_names` (null: resets it) on the server `admin` is a superuser of, and reloads. */
export async function setSyncStandbys(admin: pg.Client, names: string | null): Promise<void> {
  await admin.query(names === null ? 'ALTER SYSTEM RESET synchronous_standby_names' : `ALTER SYSTEM SET synchronous_standby_names = '${names}'`);
  await admin.query('SELECT pg_catalog.pg_reload_conf()');
}

/** The stall proofs' teardown: no standby asked for any more, then the superuser's client, the app, the server and its folder. */
export async function endStallCluster(c: { admin?: pg.Client; t?: { close(): Promise<void> }; server?: { stop(): Promise<void> }; dataDir?: string }): Promise<void> {
  if (c.admin) await setSyncStandbys(c.admin, null).catch(() => undefined);
  await c.admin?.end().catch(() => undefined);
  await c.t?.close().catch(() => undefined);
  await c.server?.stop();
  if (c.dataDir) await rm(c.dataDir, { recursive: true, force: true });
}
