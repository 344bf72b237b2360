/**
 * A primary that cannot take writes (Patroni restarting PostgreSQL read-only, or demoting it to a
 * standby) is unavailability, not a fault: writes answer 503 `service_unavailable` with Retry-After
 * in the envelope (never 500), and /readyz answers 503 naming why, so the balancer takes the
 * instance out; both recover once writes are taken again.
 *
 * The file's own database (tests/support/test-environment.js) is made read-only for new sessions
 * (`ALTER DATABASE … SET default_transaction_read_only = on`), and its sessions are cut, as the
 * restart, or HAProxy's `on-marked-down shutdown-sessions` at a demotion, cuts them; the pools then
 * reconnect to a server that refuses writes. Nothing outside that database is touched.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import pg from 'pg';
import { startTestApp, type TestApp } from '../support/app.js';
import { testDatabaseUrl } from '../support/db.js';
import { eventually } from '../support/eventually.js';

let t: TestApp;
let admin: pg.Client;
let key: string;
let contactId: number;
const warnings: Array<{ message: string; meta: unknown }> = [];

/** Sets the file database's default for new sessions and cuts every session but ours. */
async function readOnly(on: boolean): Promise<void> {
  const db = admin.escapeIdentifier((await admin.query<{ d: string }>('SELECT current_database() AS d')).rows[0].d);
  await admin.query(on ? `ALTER DATABASE ${db} SET default_transaction_read_only = on` : `ALTER DATABASE ${db} RESET default_transaction_read_only`);
  await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
}

beforeAll(async () => {
  const { createLogger } = await import('../../lib/platform/logger.js');
  const logger = createLogger({ silent: true });
  const warn = logger.warn.bind(logger);
  (logger as unknown as { warn: (m: unknown, meta?: unknown) => unknown }).warn = (m: unknown, meta?: unknown) => {
    warnings.push({ message: String(m), meta });
    return warn(m as string, meta);
  };
  t = await startTestApp({ logger, webhooks: true, config: { devAllowPrivateTargets: true } });
  admin = new pg.Client({ connectionString: testDatabaseUrl() });
  admin.on('error', () => undefined);
  await admin.connect();
  const project = await t.admin.project('read-only');
  key = (await t.admin.key(project.id, ['webhooks:manage', 'contacts:read', 'contacts:write'])).secret;
  const row = await t.db.prisma.contact.create({ data: { projectId: project.id, phone: '12125550100', name: 'Grace Hopper', tags: [], attributes: {}, optedIn: false } });
  contactId = Number(row.id);
}, 60_000);

afterAll(async () => {
  // The database is dropped with the file; writable again first, so nothing else ever meets it read-only.
  await readOnly(false).catch(() => undefined);
  await admin?.end().catch(() => undefined);
  // The app closes over sessions the reset just cut. Its job runner's LISTEN connection was then
  // reconnecting, and the reconnect kept a pool client after the runner stopped: the close waited
  // for ever (past 90 s in a CI run; jobs/listen-client-guard.ts). Now it takes well under a second.
  await t?.close();
}, 30_000);

const registerWebhook = () =>
  request(t.app).post('/v1/webhooks').set('Authorization', `Bearer ${key}`).send({ url: 'http://127.0.0.1:9/read-only', events: ['read_only.check'] });
const renameContact = (name: string) =>
  request(t.app).patch(`/v1/contacts/${contactId}`).set('Authorization', `Bearer ${key}`).set('Content-Type', 'application/json').send(JSON.stringify({ name }));

describe('a primary that refuses writes', () => {
  it('When the database turns read-only, then writes answer 503 service_unavailable with Retry-After, /readyz answers 503 naming it, and both recover once it takes writes again', async () => {
    await request(t.app).get('/readyz').expect(200);
    const before = await registerWebhook();
    expect([before.status, before.body.error]).toEqual([201, undefined]);

    await readOnly(true);
    // The pools drop the cut sessions (a probe that meets one first says `unreachable`) and
    // reconnect on next use; /readyz then sees the new sessions refuse writes.
    const down = await eventually(() => request(t.app).get('/readyz'), (r: any) => r.status === 503 && /^read-only/.test(r.body.error.details.checks.database), 15_000);
    expect(down.body).toMatchObject({ success: false, error: { code: 'service_unavailable' } });
    expect(down.body.error.details.checks.database).toMatch(/^read-only \(default_transaction_read_only is on/);
    expect(Number(down.headers['retry-after'])).toBeGreaterThan(0);

    // Writes through Prisma (the contact) and through the registration store: 503 in the envelope, never 500.
    for (const res of [await renameContact('Ada Lovelace'), await registerWebhook()]) {
      expect([res.status, res.body.error?.code]).toEqual([503, 'service_unavailable']);
      expect(res.body).toMatchObject({ success: false, error: { code: 'service_unavailable' }, request_id: res.headers['x-request-id'] });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    }
    // It was the read-only refusal (SQLSTATE 25006) that was answered so, not a cut session.
    expect(warnings.some((w) => /answering 503/.test(w.message) && /read-only transaction/.test(String((w.meta as { cause?: unknown })?.cause)))).toBe(true);
    // Reads still work on a read-only primary.
    expect((await request(t.app).get(`/v1/contacts/${contactId}`).set('Authorization', `Bearer ${key}`)).status).toBe(200);

    await readOnly(false);
    await eventually(() => request(t.app).get('/readyz'), (r: any) => r.status === 200, 15_000);
    const renamed = await renameContact('Ada Lovelace');
    expect([renamed.status, renamed.body.data?.contact?.name]).toEqual([200, 'Ada Lovelace']);
    expect((await registerWebhook()).status).toBe(201);
  }, 60_000);
});
