/**
 * The console's pages through HTTP (issue 47, items 1, 3, 6, 7): database, secrets, logs and
 * billing as an owner and as a member, each action and each refusal: a change shown as its dry run
 * first and applied once however often its form is posted, refused without or with a stale CSRF
 * token and for a member (nothing changed), a DDL the confinement refuses (its reason shown,
 * nothing run), an edit that matches more rows than the console changes at once (refused before
 * anything changes), and hostile text from tables, logs and names rendered as text.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import type { TestApp } from '../support/app.js';
import { useStorageTestApp } from '../support/tables.js';
import { csrfOf, person } from '../support/dashboard.js';
import { asProject, HOSTILE, RATE_CARD, seedBotLog, seedDeliveries, seedSpend } from '../support/console.js';
import { physicalSchema } from '../../lib/tables/isolation.js';

let t: TestApp;
let n = 0;
const email = (who: string) => `${who}.console${++n}.${Date.now()}@example.com`;
const projects: string[] = [];

useStorageTestApp(projects, (app) => (t = app));

async function project(name = 'Console') {
  const p = await t.admin.project(name);
  projects.push(p.id);
  return p;
}

/** The value of a hidden field on a page (the first one of that name). */
function hiddenOf(page: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(page);
  if (!m) throw new Error(`no field ${name} on the page`);
  return m[1].replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#96;/g, '`').replace(/&amp;/g, '&');
}

/** Every hidden field of the form whose action ends with `action` (the apply form of a preview). */
function formFields(page: string, action: string): Record<string, string> {
  const start = page.indexOf(`action="${action}"`);
  if (start < 0) throw new Error(`no form to ${action}`);
  const form = page.slice(start, page.indexOf('</form>', start));
  const out: Record<string, string> = {};
  for (const m of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) out[m[1]] = hiddenOf(m[0], m[1]);
  return out;
}

async function rows(projectId: string, table: string, schema: 'public' | 'preview' = 'public') {
  return (await t.db.pool.query(`SELECT * FROM ${await physicalSchema(t.db.sql, projectId, schema)}.${table} ORDER BY 1`)).rows;
}
const audit = (projectId: string, action: string) => t.db.prisma.dashboardAudit.findMany({ where: { projectId, action }, orderBy: { id: 'asc' } });

describe('Database page', () => {
  it('When an owner creates a table with the form, adds a row after its dry run and posts the apply twice, then one row is stored and audited', async () => {
    const p = await project();
    const owner = await person(t, p.id, email('owner'));
    const base = `/dashboard/projects/${p.id}/database`;
    const page = await owner.agent.get(base).expect(200);
    expect(page.text).toContain('Quota of public');
    expect(page.text).toContain('No tables in public yet');
    const created = await owner.agent.post(`${base}/tables`).type('form').send({
      _csrf: csrfOf(page.text), _once: hiddenOf(page.text, '_once'), schema: 'public', name: 'opening_hours',
      col_name_0: 'id', col_type_0: 'serial', col_pk_0: '1',
      col_name_1: 'weekday', col_type_1: 'integer',
      col_name_2: 'opens', col_type_2: 'time',
      col_name_3: 'note', col_type_3: 'text', col_null_3: '1',
    });
    expect(created.status).toBe(303);
    expect(created.headers.location).toBe(`${base}/public/opening_hours?done=table_created`);
    const table = await owner.agent.get(created.headers.location).expect(200);
    expect(table.text).toContain('Table created.');
    expect(table.text).toMatch(/weekday<\/td><td data-label="Type">integer/);

    // The add form shows the dry run first: nothing is stored yet.
    const preview = await owner.agent.post(`${base}/public/opening_hours/rows`).type('form')
      .send({ _csrf: csrfOf(table.text), step: 'preview', v_weekday: '1', v_opens: '09:00', v_note: HOSTILE });
    expect(preview.status).toBe(200);
    expect(preview.text).toContain('Dry run: the row as it would be stored.');
    expect(preview.text).toContain('09:00:00');
    expect(preview.text).not.toContain('<script>alert(1)');
    expect(preview.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(await rows(p.id, 'opening_hours')).toEqual([]);
    const apply = formFields(preview.text, `${base}/public/opening_hours/rows`);
    expect(apply.step).toBe('apply');
    const first = await owner.agent.post(`${base}/public/opening_hours/rows`).type('form').send(apply);
    const again = await owner.agent.post(`${base}/public/opening_hours/rows`).type('form').send(apply);
    expect(first.status).toBe(303);
    expect(again.status).toBe(303);
    expect(again.headers.location).toBe(first.headers.location);
    // The dry run took id 1 from the sequence (sequences are not rolled back, as documented).
    expect(await rows(p.id, 'opening_hours')).toEqual([{ id: 2, weekday: 1, opens: '09:00:00', note: HOSTILE }]);
    expect(await audit(p.id, 'row.insert')).toHaveLength(1);
    expect((await audit(p.id, 'table.create'))[0]).toMatchObject({ subject: 'public.opening_hours', actor: expect.stringContaining('owner.') });

    // The table's values are text on the page; the list shows the table with its size.
    const after = await owner.agent.get(`${base}/public/opening_hours`).expect(200);
    expect(after.text).not.toContain('<img src=x');
    expect(after.text).toContain('&lt;img src=x onerror=alert(2)&gt;');
    const list = await owner.agent.get(base).expect(200);
    expect(list.text).toMatch(/<a href="[^"]+\/public\/opening_hours">opening_hours<\/a>/);
  });

  it('When a DDL statement is refused by the confinement, then its reason is on the page with the statement kept, and nothing ran; an accepted one runs and is audited', async () => {
    const p = await project();
    const owner = await person(t, p.id, email('owner'));
    await asProject(t, p.id, 'public', 'CREATE TABLE items (id integer PRIMARY KEY, name text)');
    const base = `/dashboard/projects/${p.id}/database`;
    const send = async (sql: string) => {
      const page = await owner.agent.get(base);
      return owner.agent.post(`${base}/ddl`).type('form').send({ _csrf: csrfOf(page.text), _once: hiddenOf(page.text, '_once'), schema: 'public', sql });
    };
    for (const sql of ['DROP TABLE items; DROP TABLE items', "CREATE TABLE x AS SELECT pg_read_file('/etc/passwd')", 'SET search_path = public', 'CREATE TABLE other_schema.t (a int)']) {
      const refused = await send(sql);
      expect(refused.status).toBe(400);
      expect(refused.text).toContain('Refused, nothing was run:');
      expect(refused.text).toContain(sql.replace(/'/g, '&#39;'));
    }
    expect(await rows(p.id, 'items')).toEqual([]);
    const tables = await t.db.pool.query('SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1', [await physicalSchema(t.db.sql, p.id, 'public')]);
    const ran = await send('ALTER TABLE items ADD COLUMN price numeric');
    expect(ran.status).toBe(303);
    expect(ran.headers.location).toContain('done=ddl_ran');
    expect((await t.db.pool.query('SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1', [await physicalSchema(t.db.sql, p.id, 'public')])).rows[0].n).toBe(tables.rows[0].n);
    const describe = await owner.agent.get(`${base}/public/items`).expect(200);
    expect(describe.text).toMatch(/price<\/td><td data-label="Type">numeric/);
    expect((await audit(p.id, 'table.ddl')).map((a) => (a.after as { sql: string }).sql)).toEqual(['ALTER TABLE items ADD COLUMN price numeric']);
  });
});

describe('Database page', () => {
  it('When an owner edits a row and deletes rows by filter, then each shows its dry run; more rows than the console changes at once, or than the preview showed, are refused before anything changes', async () => {
    const p = await project();
    const owner = await person(t, p.id, email('owner'));
    await asProject(t, p.id, 'public', 'CREATE TABLE stock (id integer PRIMARY KEY, sku text NOT NULL, qty integer)', "INSERT INTO stock SELECT g, 'sku' || g, g % 3 FROM generate_series(1, 150) g");
    const base = `/dashboard/projects/${p.id}/database/public/stock`;
    // Filters, sort and keyset pages.
    const page1 = await owner.agent.get(`${base}?f0c=qty&f0o=eq&f0v=0&order_by=id&direction=desc`).expect(200);
    expect(page1.text).toContain('>sku150<');
    const next = /href="([^"]+)" rel="next"/.exec(page1.text)![1].replace(/&amp;/g, '&');
    const page2 = await owner.agent.get(next).expect(200);
    expect(page2.text).toContain('>sku75<');
    expect(page2.text).not.toContain('>sku150<');
    const badFilter = await owner.agent.get(`${base}?f0c=qty&f0o=eq&f0v=many`);
    expect(badFilter.status).toBe(400);
    expect(badFilter.text).toContain('does not fit column');

    // One row: edit form, its dry run, then applied.
    const edit = await owner.agent.get(`${base}/edit?key=${encodeURIComponent(JSON.stringify([{ column: 'id', op: 'eq', value: '7' }]))}`).expect(200);
    const fields = formFields(edit.text, `${base}/update`);
    const preview = await owner.agent.post(`${base}/update`).type('form').send({ ...fields, _csrf: csrfOf(edit.text), v_sku: 'sku7', v_qty: '42' });
    expect(preview.status).toBe(200);
    expect(preview.text).toMatch(/1 row\(s\) match and would get qty = &quot;42&quot;/);
    const apply = formFields(preview.text, `${base}/update`);
    expect(apply.confirmed).toBe('1');
    expect((await owner.agent.post(`${base}/update`).type('form').send(apply)).status).toBe(303);
    expect((await owner.agent.post(`${base}/update`).type('form').send(apply)).status).toBe(303);
    expect((await rows(p.id, 'stock')).find((r) => r.id === 7)).toEqual({ id: 7, sku: 'sku7', qty: 42 });
    expect(await audit(p.id, 'row.update')).toHaveLength(1);

    // A filter matching 100 rows or more than the console's limit: refused at the dry run.
    const table = await owner.agent.get(base);
    const wide = await owner.agent.post(`${base}/delete`).type('form').send({ _csrf: csrfOf(table.text), step: 'preview', filters: JSON.stringify([{ column: 'id', op: 'gt', value: 0 }]) });
    expect(wide.status).toBe(409);
    expect(wide.text).toContain('150 rows');
    expect(wide.text).toContain('Narrow the filters');
    // An apply whose rows grew after its preview (a forged or stale count) is refused too.
    const stale = await owner.agent.post(`${base}/delete`).type('form').send({ _csrf: csrfOf(table.text), _once: 'a'.repeat(32), step: 'apply', confirmed: '1', filters: JSON.stringify([{ column: 'qty', op: 'eq', value: 1 }]) });
    expect(stale.status).toBe(409);
    expect(await rows(p.id, 'stock')).toHaveLength(150);
    // A delete of what the filters match, after its dry run.
    const del = await owner.agent.post(`${base}/delete`).type('form').send({ _csrf: csrfOf(table.text), step: 'preview', filters: JSON.stringify([{ column: 'qty', op: 'eq', value: 2 }]) });
    expect(del.status).toBe(200);
    expect(del.text).toContain('50 row(s) would be deleted.');
    expect((await owner.agent.post(`${base}/delete`).type('form').send(formFields(del.text, `${base}/delete`))).status).toBe(303);
    expect(await rows(p.id, 'stock')).toHaveLength(100);
    expect((await audit(p.id, 'row.delete'))[0].after).toEqual({ affected: 50 });
  });

  it('When preview is copied to public, then the diff comes first and applying it adds what public lacks', async () => {
    const p = await project();
    const owner = await person(t, p.id, email('owner'));
    await asProject(t, p.id, 'preview', 'CREATE TABLE menu (id serial PRIMARY KEY, dish text NOT NULL)', 'CREATE INDEX menu_dish ON menu (dish)');
    const base = `/dashboard/projects/${p.id}/database`;
    const page = await owner.agent.get(base);
    const diff = await owner.agent.post(`${base}/copy-preview`).type('form').send({ _csrf: csrfOf(page.text), step: 'preview' });
    expect(diff.status).toBe(200);
    expect(diff.text).toContain('This is a dry run');
    expect(diff.text).toMatch(/New tables<\/dt><dd>menu/);
    expect((await owner.agent.get(`${base}/public/menu`)).status).toBe(404);
    const apply = formFields(diff.text, `${base}/copy-preview`);
    expect((await owner.agent.post(`${base}/copy-preview`).type('form').send(apply)).headers.location).toContain('done=copied');
    expect((await owner.agent.post(`${base}/copy-preview`).type('form').send(apply)).status).toBe(303);
    expect((await owner.agent.get(`${base}/public/menu`)).status).toBe(200);
    expect(await audit(p.id, 'table.copy_preview')).toHaveLength(1);
  });

  it('When a table is exported, then the CSV streams every row, quotes what needs quoting and defuses formulas', async () => {
    const p = await project();
    const member = await person(t, p.id, email('member'), 'member');
    await asProject(t, p.id, 'public', 'CREATE TABLE notes (id integer PRIMARY KEY, body text, meta jsonb)',
      `INSERT INTO notes SELECT g, 'note ' || g, NULL FROM generate_series(1, 120) g`,
      `INSERT INTO notes VALUES (1000, 'say "hi", then
bye', '{"a":1}'), (1001, '=HYPERLINK("http://x")', NULL)`);
    const res = await member.agent.get(`/dashboard/projects/${p.id}/database/public/notes/csv`).buffer(true).parse((r, cb) => {
      let s = '';
      r.on('data', (c: Buffer) => (s += c.toString('utf8')));
      r.on('end', () => cb(null, s));
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    const text = res.body as string;
    const lines = text.split('\r\n');
    expect(lines[0]).toBe('id,body,meta');
    expect(text).toContain('1000,"say ""hi"", then\nbye","{""a"":1}"\r\n');
    expect(text).toContain(`1001,"'=HYPERLINK(""http://x"")",\r\n`);
    expect(lines.filter((l) => /^\d+,note \d+,$/.test(l))).toHaveLength(120);
    expect((await member.agent.get(`/dashboard/projects/${p.id}/database/public/nowhere/csv`)).status).toBe(404);
  });
});

describe('Database page', () => {
  it('When a member or a form without its token tries a change, then it is refused and nothing changes; the member still reads', async () => {
    const p = await project();
    await asProject(t, p.id, 'public', 'CREATE TABLE items (id integer PRIMARY KEY, name text)', "INSERT INTO items VALUES (1, 'one')");
    const owner = await person(t, p.id, email('owner'));
    const member = await person(t, p.id, email('member'), 'member');
    const base = `/dashboard/projects/${p.id}/database`;
    const read = await member.agent.get(`${base}/public/items`).expect(200);
    expect(read.text).toContain('>one<');
    expect(read.text).not.toContain('Add a row');
    expect((await member.agent.get(base)).text).toContain('owners and admins change them');
    const csrf = csrfOf(read.text);
    const once = 'b'.repeat(32);
    const attempts = [
      member.agent.post(`${base}/public/items/rows`).type('form').send({ _csrf: csrf, _once: once, step: 'apply', v_id: '2', v_name: 'two' }),
      member.agent.post(`${base}/public/items/update`).type('form').send({ _csrf: csrf, _once: once, step: 'apply', confirmed: '1', filters: '[{"column":"id","op":"eq","value":1}]', set_column: 'name', set_value: 'x' }),
      member.agent.post(`${base}/public/items/delete`).type('form').send({ _csrf: csrf, _once: once, step: 'apply', confirmed: '1', filters: '[{"column":"id","op":"eq","value":1}]' }),
      member.agent.post(`${base}/ddl`).type('form').send({ _csrf: csrf, _once: once, schema: 'public', sql: 'DROP TABLE items' }),
      member.agent.post(`${base}/tables`).type('form').send({ _csrf: csrf, _once: once, schema: 'public', name: 'x', col_name_0: 'a', col_type_0: 'text' }),
      member.agent.post(`${base}/copy-preview`).type('form').send({ _csrf: csrf, _once: once, step: 'apply' }),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.status).toBe(403);
      expect(res.text).toContain('(member) cannot');
    }
    // An owner's form without its CSRF token, or with a stale one (another session's), is refused too.
    const ownerCsrf = await owner.csrf(base);
    expect((await owner.agent.post(`${base}/public/items/rows`).type('form').send({ _once: once, step: 'apply', v_id: '3', v_name: 'three' })).status).toBe(403);
    expect((await owner.agent.post(`${base}/public/items/rows`).type('form').send({ _csrf: csrf, _once: once, step: 'apply', v_id: '3', v_name: 'three' })).status).toBe(403);
    // Without its one-time token the apply is refused as out of date.
    const noOnce = await owner.agent.post(`${base}/public/items/rows`).type('form').send({ _csrf: ownerCsrf, step: 'apply', v_id: '3', v_name: 'three' });
    expect(noOnce.status).toBe(400);
    expect(noOnce.text).toContain('out of date');
    expect(await rows(p.id, 'items')).toEqual([{ id: 1, name: 'one' }]);
    expect(await t.db.prisma.dashboardAudit.count({ where: { projectId: p.id } })).toBe(0);
  });
});

describe('Secrets page', () => {
  it('When an owner sets, replaces and deletes a secret, then the value is never on a page or in an error, each change is audited once, and a member only reads', async () => {
    const p = await project();
    const owner = await person(t, p.id, email('owner'));
    const member = await person(t, p.id, email('member'), 'member');
    const path = `/dashboard/projects/${p.id}/secrets`;
    const value = 'sk_live_VALUE_never_shown_4242';
    const page = await owner.agent.get(path).expect(200);
    const form = { _csrf: csrfOf(page.text), _once: hiddenOf(page.text, '_once'), name: 'SHOP_API_TOKEN', value, production_only: '1' };
    const set = await owner.agent.post(path).type('form').send(form);
    expect(set.headers.location).toBe(`${path}?done=secret_set`);
    expect((await owner.agent.post(path).type('form').send(form)).headers.location).toBe(`${path}?done=secret_set`);
    expect(await audit(p.id, 'secret.set')).toHaveLength(1);
    const listed = await owner.agent.get(`${path}?done=secret_set`).expect(200);
    expect(listed.text).toContain('SHOP_API_TOKEN');
    expect(listed.text).toContain('production only');
    expect(listed.text).not.toContain(value);

    // Refusals: a bad name, a value over the limit; neither echoes the value.
    const bad = await owner.agent.post(path).type('form').send({ _csrf: form._csrf, _once: hiddenOf(listed.text, '_once'), name: `bad<b>name`, value });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Not saved:');
    expect(bad.text).not.toContain(value);
    expect(bad.text).not.toContain('<b>name');
    const big = 'X'.repeat(t.config.botSecretMaxBytes + 1);
    const tooLarge = await owner.agent.post(path).type('form').send({ _csrf: form._csrf, _once: hiddenOf(listed.text, '_once'), name: 'BIG', value: big });
    expect(tooLarge.status).toBe(400);
    expect(tooLarge.text).toContain(`at most ${t.config.botSecretMaxBytes} bytes`);
    expect(tooLarge.text).not.toContain(big.slice(0, 100));

    // Replace (production-only off), then delete.
    const before = (await t.db.pool.query('SELECT fingerprint FROM bot_secrets WHERE project_id = $1', [p.id])).rows[0].fingerprint;
    const replaced = await owner.agent.post(path).type('form').send({ _csrf: form._csrf, _once: hiddenOf(listed.text, '_once'), name: 'SHOP_API_TOKEN', value: 'another value' });
    expect(replaced.headers.location).toBe(`${path}?done=secret_replaced`);
    const row = (await t.db.pool.query('SELECT fingerprint, production_only FROM bot_secrets WHERE project_id = $1', [p.id])).rows[0];
    expect(row.fingerprint).not.toBe(before);
    expect(row.production_only).toBe(false);

    // A member reads names and fingerprints, and is refused every change.
    const seen = await member.agent.get(path).expect(200);
    expect(seen.text).toContain(row.fingerprint);
    expect(seen.text).not.toContain('Set a secret');
    const memberCsrf = csrfOf(seen.text);
    expect((await member.agent.post(path).type('form').send({ _csrf: memberCsrf, _once: 'c'.repeat(32), name: 'SHOP_API_TOKEN', value: 'member value' })).status).toBe(403);
    expect((await member.agent.post(`${path}/SHOP_API_TOKEN/delete`).type('form').send({ _csrf: memberCsrf, _once: 'c'.repeat(32) })).status).toBe(403);
    expect((await t.db.pool.query('SELECT fingerprint FROM bot_secrets WHERE project_id = $1', [p.id])).rows[0].fingerprint).toBe(row.fingerprint);

    const again = await owner.agent.get(path);
    const delOnce = /action="[^"]+\/SHOP_API_TOKEN\/delete"[^>]*>.*?name="_once" value="([a-f0-9]{32})"/s.exec(again.text)![1];
    const del = await owner.agent.post(`${path}/SHOP_API_TOKEN/delete`).type('form').send({ _csrf: form._csrf, _once: delOnce });
    expect(del.headers.location).toBe(`${path}?done=secret_deleted`);
    expect((await owner.agent.post(`${path}/SHOP_API_TOKEN/delete`).type('form').send({ _csrf: form._csrf, _once: delOnce })).status).toBe(303);
    expect(await t.db.pool.query('SELECT 1 FROM bot_secrets WHERE project_id = $1', [p.id]).then((r) => r.rowCount)).toBe(0);
    expect(await audit(p.id, 'secret.delete')).toHaveLength(1);
    const trail = JSON.stringify((await t.db.pool.query('SELECT before, after FROM dashboard_audit WHERE project_id = $1', [p.id])).rows);
    expect(trail).not.toContain(value);
  });
});

describe('Logs page', () => {
  it('When deliveries failed, then attempts show status, latency, error and the answer as text; an owner redelivers once, a member cannot', async () => {
    const p = await project();
    const { failed, succeeded } = await seedDeliveries(t, p.id, `https://hooks.example.com/${HOSTILE}`);
    await seedBotLog(t, p.id);
    const owner = await person(t, p.id, email('owner'));
    const member = await person(t, p.id, email('member'), 'member');
    const path = `/dashboard/projects/${p.id}/logs`;
    const page = await owner.agent.get(path).expect(200);
    expect(page.text).toMatch(/500 · 812 ms/);
    expect(page.text).toContain('timeout after 10000 ms');
    expect(page.text).toContain('{&quot;error&quot;:&quot;&lt;script&gt;');
    expect(page.text).not.toContain('<script>alert');
    expect(page.text).not.toContain('<img src=x');
    expect(page.text).toContain('TypeError at src/bot.ts:12:5');
    const errorsOnly = await owner.agent.get(`${path}?level=error`).expect(200);
    expect(errorsOnly.text).not.toContain('order 1042 looked up');
    const only = await owner.agent.get(`${path}?status=failed`).expect(200);
    expect(only.text).toContain(failed);
    expect(only.text).not.toContain(succeeded);

    const memberPage = await member.agent.get(path).expect(200);
    expect(memberPage.text).not.toContain('>Redeliver<');
    expect((await member.agent.post(`${path}/deliveries/${failed}/redeliver`).type('form').send({ _csrf: csrfOf(memberPage.text), _once: 'd'.repeat(32) })).status).toBe(403);
    expect((await t.db.pool.query('SELECT status FROM webhook_deliveries WHERE id = $1', [failed])).rows[0].status).toBe('failed');

    const once = new RegExp(`action="[^"]+/deliveries/${failed}/redeliver"[^>]*>.*?name="_once" value="([a-f0-9]{32})"`, 's').exec(page.text)![1];
    const form = { _csrf: csrfOf(page.text), _once: once };
    const first = await owner.agent.post(`${path}/deliveries/${failed}/redeliver`).type('form').send(form);
    expect(first.status).toBe(303);
    expect(first.headers.location).toContain('done=redelivered');
    expect((await owner.agent.post(`${path}/deliveries/${failed}/redeliver`).type('form').send(form)).status).toBe(303);
    const row = (await t.db.pool.query('SELECT status, attempts, next_attempt_at FROM webhook_deliveries WHERE id = $1', [failed])).rows[0];
    expect(row).toMatchObject({ status: 'pending', attempts: 0 });
    expect(row.next_attempt_at).not.toBeNull();
    expect(await audit(p.id, 'webhook.redeliver')).toHaveLength(1);
    // Pending now: a second redelivery (a new form) is refused with its reason.
    const pending = await owner.agent.post(`${path}/deliveries/${failed}/redeliver`).type('form').send({ _csrf: form._csrf, _once: 'e'.repeat(32) });
    expect(pending.status).toBe(409);
    expect(pending.text).toContain('cannot be sent again');
  });

  it('When the project\'s keys are refused, then the API errors show by operation, status and code, without content', async () => {
    const p = await project();
    const key = (await t.admin.key(p.id, ['tables:read'])).secret;
    const call = () => request(t.app).post('/v1/tables/secret_table/rows').set('Authorization', `Bearer ${key}`).send({ rows: [{ password: 'hunter2' }] });
    for (let i = 0; i < 3; i++) expect((await call()).status).toBe(403);
    expect((await request(t.app).get('/v1/tables/nowhere/rows').set('Authorization', `Bearer ${key}`)).status).toBe(404);
    const owner = await person(t, p.id, email('owner'));
    const page = await owner.agent.get(`/dashboard/projects/${p.id}/logs`).expect(200);
    expect(page.text).toMatch(/<code>insertTableRows<\/code><\/td><td data-label="Status">403<\/td><td data-label="Code"><code>insufficient_scope<\/code><\/td><td data-label="Count">3</);
    expect(page.text).toMatch(/<code>listTableRows<\/code><\/td><td data-label="Status">404<\/td><td data-label="Code"><code>table_not_found<\/code>/);
    expect(page.text).not.toContain('hunter2');
    expect(page.text).not.toContain('secret_table');
  });
});

describe('Billing page', () => {
  it('When messages were priced by the channel, then spend shows by day, category and campaign as an estimate, with an SVG chart and a CSV', async () => {
    await t.admin.call('put', '/admin/rate-card', RATE_CARD);
    const p = await project();
    await seedSpend(t, p.id);
    const member = await person(t, p.id, email('member'), 'member');
    const path = `/dashboard/projects/${p.id}/billing`;
    const page = await member.agent.get(`${path}?month=2026-03`).expect(200);
    expect(page.text).toContain('<strong>Estimate.</strong>');
    // Charged: two marketing messages to +1 (0.025, one of them the campaign's) and one to +49 (0.1365); one free, one unreported.
    expect(page.text).toContain('2026-03: 0.1865 USD estimated, 4 priced messages');
    expect(page.text).toContain('1 messages sent this month have no pricing reported yet');
    expect(page.text).toMatch(/<svg viewBox="0 0 720 220" role="img"/);
    expect(page.text).toMatch(/<title>01: 0\.1865 USD<\/title>/);
    expect(page.text).toMatch(/<td data-label="Category">marketing<\/td><td data-label="Type">regular<\/td><td data-label="Messages">3/);
    expect(page.text).toMatch(/Spring &lt;script&gt;[^<]*&lt;\/script&gt;[^<]*<\/a><\/td><td data-label="Messages">1<\/td><td data-label="Charged">1<\/td>/);
    expect(page.text).toContain('Spring &lt;script&gt;');
    expect(page.text).not.toContain('<script>alert');
    expect(page.text).toContain('Daily send quota');
    expect(page.text).toContain('Messaging limit');
    const csv = await member.agent.get(`${path}/csv?month=2026-03`).expect(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.text.split('\r\n')[0]).toBe('section,key,type,messages,charged,free,not_priced,estimate,currency');
    expect(csv.text).toContain('day,2026-03-01,,4,3,1,0,0.1865,USD');
    expect(csv.text).toContain('total,2026-03,,4,3,1,0,0.1865,USD');
    const empty = await member.agent.get(`${path}?month=2026-01`).expect(200);
    expect(empty.text).toContain('No priced messages this month.');
  });
});
