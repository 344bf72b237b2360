/** Commits that wait for a synchronous standby: the setting the commit-stall proofs turn on and off. */
import type pg from 'pg';

/** Sets `synchronous_standby_names` (null: resets it) on the server `admin` is a superuser of, and reloads. */
export async function setSyncStandbys(admin: pg.Client, names: string | null): Promise<void> {
  await admin.query(names === null ? 'ALTER SYSTEM RESET synchronous_standby_names' : `ALTER SYSTEM SET synchronous_standby_names = '${names}'`);
  await admin.query('SELECT pg_catalog.pg_reload_conf()');
}
