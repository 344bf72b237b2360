/**
 * The inbox at a shop's scale (issue 68's performance line): 10,000 conversations, few of them
 * waiting, and a conversation of 5,000 messages. The default view (needs a reply, with the wait,
 * the previews and the tab's count) and the long conversation are timed through HTTP; the figures
 * are printed, and each must stay under 300 ms (the median of 5 warm reads).
 *
 * @alone It times reads against a bound: a proof beside it on the other core took the long
 * conversation to 305 ms in CI (tests/support/alone.js).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApp, type TestApp } from '../support/app.js';
import { person } from '../support/dashboard.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

describe('the inbox at scale', () => {
  it('When a project has 10,000 conversations (1 in 50 waiting) and one of 5,000 messages, then the default view and that conversation each render under 300 ms', async () => {
    const project = await t.admin.project('Big shop');
    const now = t.clock.now();
    // Seeded in SQL: 10,000 customers, each one message; 49 of 50 answered by an API key.
    await t.db.pool.query(
      `WITH ct AS (
         INSERT INTO contacts (project_id, phone, name, created_at, updated_at)
         SELECT $1, (14150000000 + g)::text, 'Customer ' || g, $2, $2 FROM generate_series(1, 10000) g RETURNING id, phone
       ), cv AS (
         INSERT INTO conversations (project_id, contact_id, last_message_at, last_inbound_at, created_at, updated_at)
         SELECT $1, id, $2::timestamptz - (phone::bigint - 14150000000) * interval '1 second', $2::timestamptz - (phone::bigint - 14150000000) * interval '1 second', $2, $2 FROM ct
         RETURNING id, last_message_at
       ), inb AS (
         INSERT INTO messages (project_id, conversation_id, wamid, direction, type, content, status, sent_at, status_at)
         SELECT $1, id, 'wamid.in.' || id, 'inbound', 'text', jsonb_build_object('text', jsonb_build_object('body', 'Where is order ' || id)), 'received', last_message_at, last_message_at FROM cv
         RETURNING conversation_id, sent_at
       )
       INSERT INTO messages (project_id, conversation_id, wamid, direction, type, content, status, sent_at, status_at, author, send_ref)
       SELECT $1, conversation_id, 'wamid.out.' || conversation_id, 'outbound', 'text', '{"type":"text","content":"On its way"}', 'delivered', sent_at, sent_at,
              '{"kind":"api_key","id":"k"}', 'snd_api' || conversation_id
         FROM inb WHERE conversation_id % 50 <> 0`,
      [project.id, now],
    );
    // One long conversation: 5,000 messages.
    const { rows: [long] } = await t.db.pool.query<{ id: string }>(
      `SELECT v.id::text FROM conversations v WHERE v.project_id = $1 ORDER BY v.id LIMIT 1`, [project.id]);
    await t.db.pool.query(
      `INSERT INTO messages (project_id, conversation_id, wamid, direction, type, content, status, sent_at, status_at)
       SELECT $1, $2::bigint, 'wamid.long.' || g, CASE WHEN g % 2 = 0 THEN 'inbound' ELSE 'outbound' END, 'text',
              jsonb_build_object('text', jsonb_build_object('body', 'message ' || g)), 'received', $3::timestamptz - (5000 - g) * interval '1 second', $3
         FROM generate_series(1, 5000) g`,
      [project.id, long.id, now],
    );
    await t.db.pool.query('ANALYZE contacts; ANALYZE conversations; ANALYZE messages; ANALYZE conversation_order');
    const owner = await person(t, project.id, `scale-${Date.now()}@example.com`, 'owner');

    const time = async (path: string) => {
      const times: number[] = [];
      let last = '';
      for (let i = 0; i < 6; i++) {
        const started = performance.now();
        const res = await owner.agent.get(path);
        expect(res.status).toBe(200);
        if (i > 0) times.push(performance.now() - started); // the first read warms the caches
        last = res.text;
      }
      return { ms: median(times), text: last };
    };
    const list = await time(`/dashboard/projects/${project.id}/conversations`);
    expect([...list.text.matchAll(/data-mark="needs-reply"/g)]).toHaveLength(25);
    expect(list.text).toContain('<title>(99+) Inbox · Dashboard</title>');
    const conversation = await time(`/dashboard/projects/${project.id}/conversations/${long.id}`);
    expect(conversation.text).toContain('message 5000');
    const search = await time(`/dashboard/projects/${project.id}/conversations?filter=all&q=${encodeURIComponent('order 4242')}`);
    process.stdout.write(`inbox at scale: default view ${list.ms.toFixed(0)} ms, 5,000-message conversation ${conversation.ms.toFixed(0)} ms, message search ${search.ms.toFixed(0)} ms (median of 5)\n`);
    expect(list.ms).toBeLessThan(300);
    expect(conversation.ms).toBeLessThan(300);
  }, 120_000);
});
