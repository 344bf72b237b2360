/** Seeds for the console's pages (database, logs, billing): a table, webhook deliveries, bot log lines and priced messages, written as the service would have. */
import type { TestApp } from './app.js';
import type { Browser } from 'playwright-core';
import { browserTestApp } from './browser.js';
import { dropProjectStorage, withProjectTx } from '../../lib/tables/isolation.js';
import type { TableSchema } from '../../lib/tables/names.js';

/** The console's Chromium files' app and browser; the project they made (`projectId()`) has its storage dropped before the app closes. */
export function consoleBrowserApp(projectId: () => string | undefined, onStart: (app: { t: TestApp; browser: Browser }) => void): void {
  browserTestApp({
    simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null },
    beforeClose: async (t) => {
      const id = projectId();
      if (id) await dropProjectStorage(t.db, id).catch(() => undefined);
    },
  }, onStart);
}

export const HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)>';

/** Runs DDL or SQL as the project's role (the test's own shortcut around the console). */
export async function asProject(t: TestApp, projectId: string, schema: TableSchema, ...statements: string[]): Promise<void> {
  await withProjectTx(t.db, projectId, { readOnly: false, statementTimeoutMs: 20000, schema, ddl: true }, async (c) => {
    for (const s of statements) await c.query(s);
  });
}

/** A registration with one failed delivery (two attempts, one with a hostile answer) and one that succeeded. */
export async function seedDeliveries(t: TestApp, projectId: string, url = 'https://hooks.example.com/shop') {
  const n = Math.random().toString(36).slice(2, 10);
  const webhookId = `wh_${n}`;
  await t.db.pool.query(
    `INSERT INTO webhook_endpoints (id, project_id, url, events, secret_enc, is_active, failure_count, created_at, updated_at)
     VALUES ($1, $2, $3, ARRAY['message.received'], 'sealed', true, 0, now(), now())`,
    [webhookId, projectId, url],
  );
  const ids = { failed: `dlv_f${n}`, succeeded: `dlv_s${n}` };
  for (const [kind, id] of Object.entries(ids)) {
    const eventId = `evt_${kind}${n}`;
    await t.db.pool.query(`INSERT INTO events (id, project_id, name, data, created_at, dispatched_at) VALUES ($1, $2, 'message.received', '{}', now(), now())`, [eventId, projectId]);
    await t.db.pool.query(
      `INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, event, status, attempts, next_attempt_at, created_at, completed_at)
       VALUES ($1, $2, $3, $4, 'message.received', $5, $6, NULL, now(), now())`,
      [id, projectId, webhookId, eventId, kind, kind === 'failed' ? 2 : 1],
    );
  }
  await t.db.pool.query(
    `INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, status_code, error, duration_ms, at, response_excerpt) VALUES
     ($1, $2, 1, 500, NULL, 812, now(), $3), ($1, $2, 2, NULL, 'timeout after 10000 ms', 10000, now(), NULL), ($4, $2, 1, 200, NULL, 35, now(), 'ok')`,
    [ids.failed, webhookId, `{"error":"${HOSTILE}"}`, ids.succeeded],
  );
  return { webhookId, ...ids };
}

export async function seedBotLog(t: TestApp, projectId: string) {
  await t.db.pool.query(
    `INSERT INTO bot_logs (project_id, level, kind, message, created_at) VALUES
     ($1, 'info', 'log', 'order 1042 looked up', now()), ($1, 'error', 'error', $2, now())`,
    [projectId, `TypeError at src/bot.ts:12:5 ${HOSTILE}`],
  );
}

/** Outbound messages with the channel's pricing: to +1 and +49, a campaign's and not, charged and free, one unreported. */
export async function seedSpend(t: TestApp, projectId: string, at = '2026-03-01T10:00:00Z') {
  const contact = async (phone: string) =>
    (await t.db.pool.query<{ id: string }>(
      `INSERT INTO contacts (project_id, phone, name, created_at, updated_at) VALUES ($1, $2, $3, now(), now()) RETURNING id::text`,
      [projectId, phone, `Customer ${HOSTILE}`],
    )).rows[0].id;
  const conversation = async (contactId: string) =>
    (await t.db.pool.query<{ id: string }>(
      `INSERT INTO conversations (project_id, contact_id, state, last_message_at, created_at, updated_at) VALUES ($1, $2, 'unstructured', now(), now(), now()) RETURNING id::text`,
      [projectId, contactId],
    )).rows[0].id;
  const us = await conversation(await contact(`1415555${Math.floor(1000 + Math.random() * 8999)}`));
  const de = await conversation(await contact(`49151${Math.floor(1000000 + Math.random() * 8999999)}`));
  const broadcast = (await t.db.pool.query<{ id: string }>(
    `INSERT INTO broadcasts (id, project_id, name, template_name, template_language, category, audience, template_variables, status, created_by, created_at, updated_at)
     VALUES (gen_random_uuid(), $1, $2, 'spring', 'en_US', 'MARKETING', '{}', '{}', 'completed', 'test', now(), now()) RETURNING id::text`,
    [projectId, `Spring ${HOSTILE}`],
  )).rows[0].id;
  let k = 0;
  const message = async (conv: string, pricing: object | null, sendRef?: string) => {
    await t.db.pool.query(
      `INSERT INTO messages (project_id, conversation_id, wamid, direction, type, content, status, sent_at, status_at, pricing, send_ref)
       VALUES ($1, $2, $3, 'outbound', 'template', '{}', 'delivered', $4, $4, $5, $6)`,
      [projectId, conv, `wamid.spend${++k}.${Math.random().toString(36).slice(2)}`, at, pricing ? JSON.stringify(pricing) : null, sendRef ?? null],
    );
  };
  const marketing = { category: 'marketing', type: 'regular', pricing_model: 'PMP' };
  await message(us, marketing);
  await message(us, { category: 'utility', type: 'free_customer_service', pricing_model: 'PMP' });
  await message(de, marketing);
  await message(us, null);
  const ref = `ref_${Math.random().toString(36).slice(2)}`;
  await t.db.pool.query(
    `INSERT INTO broadcast_recipients (broadcast_id, contact_id, phone, variables, state, send_ref, wave)
     SELECT $1::uuid, c.id, c.phone, '{}', 'sent', $2, 1 FROM contacts c WHERE c.project_id = $3 AND c.phone LIKE '1%' LIMIT 1`,
    [broadcast, ref, projectId],
  );
  await message(us, marketing, ref);
  return { broadcast };
}

export const RATE_CARD = { currency: 'USD', prices: { '1': { marketing: 0.025, utility: 0.004 }, '49': { marketing: 0.1365 } } };
