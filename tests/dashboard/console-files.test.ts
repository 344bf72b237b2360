/**
 * The console's Files and media and Flows pages through HTTP (issue 47, items 4 and 8), as an
 * owner and as a member: an upload streamed through the page (stored once however often its form
 * is posted, downloaded as it was sent, deleted), refused with its reason on the page for a wrong
 * type, a name that is not one, a full quota, a body cut before the file ended and a client that
 * goes away (nothing half-stored, no temporary file left), without or with a stale CSRF token and
 * for a member (nothing stored); media assets and header samples listed and paged by keyset; a
 * flow's JSON as text, its findings, its check at the channel and its publishing (once, audited),
 * an invalid version refused with its findings; hostile names and texts rendered as text.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import net from 'node:net';
import { CookieAccessInfo } from 'cookiejar';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { csrfOf, person } from '../support/dashboard.js';
import { HOSTILE } from '../support/console.js';
import { eventually } from '../support/eventually.js';
import { expectNoTempFiles } from '../support/uploads.js';
import * as S from '../support/samples.js';

const QUOTA_BYTES = 64 * 1024;
let t: TestApp;
let n = 0;
const email = (who: string) => `${who}.files${++n}.${Date.now()}@example.com`;

beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, config: { projectFilesMaxBytes: QUOTA_BYTES } });
});
afterAll(async () => {
  await t?.close();
});

function hiddenOf(page: string, name: string, action?: string): string {
  const from = action ? page.indexOf(`action="${action}"`) : 0;
  if (from < 0) throw new Error(`no form to ${action}`);
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(page.slice(from));
  if (!m) throw new Error(`no field ${name} on the page`);
  return m[1];
}

/** Another one-time token than `token` (its first character changed: an equal token would be the same form, taken once). */
const anotherOnce = (token: string) => token.replace(/^./, (c) => (c === 'e' ? 'f' : 'e'));
const audit = (projectId: string, action: string) => t.db.prisma.dashboardAudit.findMany({ where: { projectId, action } });
const storedFiles = async (projectId: string) => (await t.db.pool.query('SELECT name, size FROM project_files WHERE project_id = $1 ORDER BY name', [projectId])).rows;

async function setup(role: 'owner' | 'admin' | 'member' = 'owner') {
  const p = await t.admin.project('Files <b>shop</b>');
  const who = await person(t, p.id, email(role), role);
  const base = `/dashboard/projects/${p.id}/files`;
  const form = async () => {
    const page = await who.agent.get(base).expect(200);
    return { page: page.text, csrf: csrfOf(page.text), once: hiddenOf(page.text, '_once', `${base}/upload`) };
  };
  return { p, who, base, form };
}

type Agent = Awaited<ReturnType<typeof person>>['agent'];
function upload(agent: Agent, base: string, fields: Record<string, string>, file: Buffer, filename = 'photo.png') {
  let req = agent.post(`${base}/upload`);
  for (const [k, v] of Object.entries(fields)) req = req.field(k, v);
  return req.attach('file', file, { filename, contentType: 'application/octet-stream' });
}

describe('Files and media page', () => {
  it('When an owner uploads a file through the page and the form is posted twice, then it is stored once, listed, downloaded as sent, and deleted', async () => {
    const { p, who, base, form } = await setup();
    const f = await form();
    expect(f.page).toContain("Quota of the project's files");
    expect(f.page).toContain('No files yet.');
    const bytes = S.png(4000);
    const first = await upload(who.agent, base, { _csrf: f.csrf, _once: f.once, name: 'menu.png' }, bytes);
    expect(first.status).toBe(303);
    expect(first.headers.location).toBe(`${base}?done=file_uploaded`);
    const again = await upload(who.agent, base, { _csrf: f.csrf, _once: f.once, name: 'menu.png' }, bytes);
    expect(again.status).toBe(303);
    expect(again.headers.location).toBe(first.headers.location);
    expect(await storedFiles(p.id)).toEqual([{ name: 'menu.png', size: bytes.length }]);
    expect(await audit(p.id, 'file.upload')).toHaveLength(1);
    expect(await audit(p.id, 'file.replace')).toHaveLength(0);

    const list = await who.agent.get(`${base}?done=file_uploaded`).expect(200);
    expect(list.text).toContain('File uploaded.');
    expect(list.text).toMatch(/<a href="[^"]+\/files\/menu\.png\/download" download>menu\.png<\/a>/);
    expect(list.text).toContain('image/png');
    expect(list.text).toMatch(/Storage: 3\.\d KiB of 64\.0 KiB/);
    // Without a name field, the file's own name is used.
    const g = await form();
    expect((await upload(who.agent, base, { _csrf: g.csrf, _once: g.once, name: '' }, S.pdf(), 'terms.pdf')).status).toBe(303);
    expect((await storedFiles(p.id)).map((r) => r.name)).toEqual(['menu.png', 'terms.pdf']);

    const down = await who.agent.get(`${base}/menu.png/download`).buffer(true).parse((res, cb) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => cb(null, Buffer.concat(chunks)));
    });
    expect(down.status).toBe(200);
    expect(down.headers['content-disposition']).toBe('attachment; filename="menu.png"');
    expect(down.headers['content-type']).toBe('application/octet-stream');
    expect(Buffer.compare(down.body as Buffer, bytes)).toBe(0);
    expect((await who.agent.get(`${base}/nothing.png/download`)).status).toBe(404);

    const del = { _csrf: f.csrf, _once: hiddenOf(list.text, '_once', `${base}/menu.png/delete`) };
    expect(list.text).toContain('data-confirm="Delete the file menu.png?');
    const gone = await who.agent.post(`${base}/menu.png/delete`).type('form').send(del);
    const goneAgain = await who.agent.post(`${base}/menu.png/delete`).type('form').send(del);
    expect([gone.status, goneAgain.status]).toEqual([303, 303]);
    expect(goneAgain.headers.location).toBe(`${base}?done=file_deleted`);
    expect((await storedFiles(p.id)).map((r) => r.name)).toEqual(['terms.pdf']);
    expect(await audit(p.id, 'file.delete')).toHaveLength(1);
    await expectNoTempFiles();
  });

  it('When an upload has a wrong type, a name that is markup, or passes the quota, then the page says why and nothing is stored', async () => {
    const { p, who, base, form } = await setup();
    const cases: Array<[Record<string, string>, Buffer, string, number, string]> = [
      [{ name: 'tool.png' }, Buffer.concat([Buffer.from('\x7fELF\x02\x01\x01'), Buffer.alloc(500, 1)]), 'x.bin', 415, 'Not uploaded:'],
      [{ name: HOSTILE }, S.png(100), 'x.png', 400, 'A file name is 1 to 128 letters'],
      [{ name: '' }, S.png(100), '<img src=x onerror=alert(1)>.png', 400, 'A file name is 1 to 128 letters'],
      [{ name: 'big.png' }, S.png(QUOTA_BYTES + 10), 'big.png', 413, 'hold at most 65536 bytes'],
    ];
    for (const [fields, bytes, filename, status, message] of cases) {
      const f = await form();
      const res = await upload(who.agent, base, { _csrf: f.csrf, _once: f.once, ...fields }, bytes, filename);
      expect({ filename, status: res.status }).toEqual({ filename, status });
      expect(res.text).toContain('<p class="error" role="alert">Not uploaded: ');
      expect(res.text).toContain(message);
      expect(res.text).not.toContain('<img src=x');
      expect(res.text).not.toContain('<script>alert');
      // The page comes back whole, with a fresh form to try again.
      expect(res.text).toContain('Upload a file');
    }
    expect(await storedFiles(p.id)).toEqual([]);
    expect(await audit(p.id, 'file.upload')).toHaveLength(0);
    await expectNoTempFiles();
  });

  it('When the body ends before the file does, or the client goes away mid-file, then nothing is stored and no temporary file is left', async () => {
    const { p, who, base, form } = await setup();
    const f = await form();
    const boundary = '----console-cut';
    const head = [`--${boundary}`, 'Content-Disposition: form-data; name="_csrf"', '', f.csrf, `--${boundary}`, 'Content-Disposition: form-data; name="_once"', '', f.once,
      `--${boundary}`, 'Content-Disposition: form-data; name="name"', '', 'cut.png', `--${boundary}`, 'Content-Disposition: form-data; name="file"; filename="cut.png"', 'Content-Type: image/png', '', ''].join('\r\n');
    // Cut: the body ends inside the file (no closing boundary); the length says so, so it is a complete request.
    const cut = Buffer.concat([Buffer.from(head), S.png(20_000).subarray(0, 9000)]);
    const res = await who.agent.post(`${base}/upload`).set('Content-Type', `multipart/form-data; boundary=${boundary}`).send(cut);
    expect(res.status).toBe(400);
    expect(res.text).toContain('The upload was interrupted before the whole file arrived; nothing was stored.');
    expect(await storedFiles(p.id)).toEqual([]);

    // A client that goes away: the length promises more than it sends, then the socket closes.
    const g = await form();
    const jar = (who.agent as unknown as { jar: { getCookies(info: CookieAccessInfo): Array<{ name: string; value: string }> } }).jar;
    const cookie = jar.getCookies(CookieAccessInfo.All).map((c) => `${c.name}=${c.value}`).join('; ');
    expect(cookie).toContain('dashboard_session=');
    const head2 = head.replace(f.csrf, g.csrf).replace(f.once, g.once);
    const server = t.app.listen(0);
    try {
      const port = (server.address() as net.AddressInfo).port;
      await new Promise<void>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1', () => {
          socket.write(`POST ${base}/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 200000\r\n\r\n`);
          socket.write(Buffer.concat([Buffer.from(head2), S.png(20_000).subarray(0, 12_000)]), () => setTimeout(() => socket.destroy(), 100));
        });
        socket.on('close', () => resolve());
        socket.on('error', reject);
      });
      // The request's end is seen (the token released) within moments.
      await eventually(async () => (await t.db.pool.query('SELECT 1 FROM idempotency_records WHERE project_id = $1 AND key = $2', [p.id, `dashboard:${g.once}`])).rowCount, (rows) => rows === 0, 5000, 'the cut upload released');
    } finally {
      server.close();
    }
    expect(await storedFiles(p.id)).toEqual([]);
    await expectNoTempFiles();
    // The same form, sent whole afterwards, goes through (the cut one released its token).
    const whole = await upload(who.agent, base, { _csrf: g.csrf, _once: g.once, name: 'cut.png' }, S.png(20_000), 'cut.png');
    expect(whole.status).toBe(303);
    expect((await storedFiles(p.id)).map((r) => r.name)).toEqual(['cut.png']);
  });
});

describe('Files and media page', () => {
  it('When an upload or a delete comes without, or with a stale, CSRF token, without a session, or from a member, then it is refused and nothing changes', async () => {
    const { p, who, base, form } = await setup();
    const f = await form();
    expect((await upload(who.agent, base, { _csrf: f.csrf, _once: f.once, name: 'keep.png' }, S.png(100))).status).toBe(303);
    for (const csrf of [undefined, 'stale-token-from-another-session']) {
      const g = await form();
      const res = await upload(who.agent, base, { ...(csrf ? { _csrf: csrf } : {}), _once: g.once, name: 'evil.png' }, S.png(100));
      expect(res.status).toBe(403);
      expect(res.text).toContain('could not be verified');
      const del = await who.agent.post(`${base}/keep.png/delete`).type('form').send({ ...(csrf ? { _csrf: csrf } : {}), _once: g.once });
      expect(del.status).toBe(403);
    }
    const anonymous = await request(t.app).post(`${base}/upload`).field('_csrf', f.csrf).attach('file', S.png(100), 'anon.png');
    expect(anonymous.status).toBe(401);
    // A member reads and downloads; the forms are not on the page, and posting them is refused.
    const member = await person(t, p.id, email('member'), 'member');
    const page = await member.agent.get(base).expect(200);
    expect(page.text).toContain('keep.png');
    expect(page.text).not.toContain('Upload a file');
    expect(page.text).not.toContain('method="post" action="/dashboard/projects');
    expect((await member.agent.get(`${base}/keep.png/download`)).status).toBe(200);
    const csrf = csrfOf(page.text);
    const up = await upload(member.agent, base, { _csrf: csrf, _once: f.once.replace(/.$/, '0'), name: 'member.png' }, S.png(100));
    expect(up.status).toBe(403);
    expect(up.text).toContain('cannot upload files');
    expect((await member.agent.post(`${base}/keep.png/delete`).type('form').send({ _csrf: csrf, _once: f.once })).status).toBe(403);
    expect((await storedFiles(p.id)).map((r) => r.name)).toEqual(['keep.png']);
    await expectNoTempFiles();
  });

  it('When a project has media assets and header samples, then they are listed newest first with keyset pages, their names as text; a file becomes media and media is deleted once', async () => {
    const { p, who, base, form } = await setup();
    const key = (await t.admin.key(p.id, ['media:write', 'media:read', 'templates:manage'])).secret;
    const m = await request(t.app).post('/v1/media').set('Authorization', `Bearer ${key}`).attach('file', S.png(200), { filename: '<img src=x onerror=alert(3)>.png', contentType: 'image/png' });
    expect(m.status).toBe(201);
    const at = new Date('2026-01-01T00:00:00Z');
    for (let i = 0; i < 21; i++) {
      await t.db.prisma.headerSample.create({ data: { handle: `4::${p.id}:sample${i}`, projectId: p.id, format: 'IMAGE', filename: i === 20 ? `${HOSTILE}.png` : `s${i}.png`, mimeType: 'image/png', size: 10, createdAt: new Date(at.getTime() + i * 1000) } });
    }
    const page = await who.agent.get(base).expect(200);
    expect(page.text).toContain(`&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;.png`);
    expect(page.text).toContain('<td data-label="File name">&lt;img src=x onerror=alert(3)&gt;.png</td>');
    expect(page.text).not.toContain('<img src=x');
    expect(page.text).toContain(`4::${p.id}:sample20<`);
    expect(page.text).not.toContain(`4::${p.id}:sample0<`);
    const older = /href="([^"]+\?samples=[^"]+)">Older samples/.exec(page.text)![1].replace(/&amp;/g, '&');
    const page2 = await who.agent.get(older).expect(200);
    expect(page2.text).toContain(`4::${p.id}:sample0<`);
    expect(page2.text).not.toContain(`4::${p.id}:sample20<`);
    expect((await who.agent.get(`${base}?samples=forged`)).status).toBe(400);

    const f = await form();
    expect((await upload(who.agent, base, { _csrf: f.csrf, _once: f.once, name: 'logo.png' }, S.png(300))).status).toBe(303);
    const listed = await who.agent.get(base);
    const made = await who.agent.post(`${base}/logo.png/media`).type('form').send({ _csrf: f.csrf, _once: hiddenOf(listed.text, '_once', `${base}/logo.png/media`) });
    expect(made.headers.location).toBe(`${base}?done=file_media`);
    const assets = await t.db.prisma.mediaAsset.findMany({ where: { projectId: p.id }, orderBy: { filename: 'asc' } });
    expect(assets.map((a) => a.filename)).toEqual(['<img src=x onerror=alert(3)>.png', 'logo.png']);
    const after = await who.agent.get(made.headers.location);
    expect(after.text).toContain('Media asset made');
    const slug = assets[0].slug;
    const del = { _csrf: f.csrf, _once: hiddenOf(after.text, '_once', `${base}/media/${slug}/delete`) };
    expect((await who.agent.post(`${base}/media/${slug}/delete`).type('form').send(del)).status).toBe(303);
    expect((await who.agent.post(`${base}/media/${slug}/delete`).type('form').send(del)).status).toBe(303);
    expect(await t.db.prisma.mediaAsset.count({ where: { projectId: p.id } })).toBe(1);
    // A file as a template header sample (as POST /v1/templates/header-sample): listed with the channel's handle.
    const sample = await who.agent.post(`${base}/logo.png/header-sample`).type('form').send({ _csrf: f.csrf, _once: hiddenOf(after.text, '_once', `${base}/logo.png/header-sample`) });
    expect(sample.headers.location).toBe(`${base}?done=header_sample`);
    const samplesNow = await t.db.prisma.headerSample.findMany({ where: { projectId: p.id, filename: 'logo.png' } });
    expect(samplesNow).toMatchObject([{ format: 'IMAGE', mimeType: 'image/png', size: S.png(300).length }]);
    expect((await who.agent.get(sample.headers.location)).text).toContain(`<code>${samplesNow[0].handle}</code>`);
    await expectNoTempFiles();

    // Deleting what is gone already (another tab) says so on the page.
    const stale = await who.agent.post(`${base}/media/${slug}/delete`).type('form').send({ _csrf: f.csrf, _once: anotherOnce(hiddenOf(after.text, '_once', `${base}/logo.png/delete`)) });
    expect(stale.status).toBe(404);
    expect(stale.text).toContain('Not done: No media asset');
  });

  it('When a project has more files than a page shows, then the next page continues after the last name', async () => {
    const { p, who, base } = await setup();
    for (let i = 0; i < 52; i++) {
      await t.db.pool.query(`INSERT INTO project_files (id, project_id, name, content_type, size, sha256, storage_key, created_at, updated_at) VALUES ($1, $2, $3, 'text/plain', 1, $4, $5, now(), now())`,
        [`pf_page${p.id.slice(-6)}${i}`, p.id, `f${String(i).padStart(2, '0')}.txt`, 'a'.repeat(64), `${p.id}/none${i}`]);
    }
    const one = await who.agent.get(base).expect(200);
    expect(one.text).toContain('f49.txt');
    expect(one.text).not.toContain('f50.txt');
    const next = /href="([^"]+\?after=[^"]+)">Next files/.exec(one.text)![1];
    expect(next).toContain('after=f49.txt');
    const two = await who.agent.get(next).expect(200);
    expect(two.text).toContain('f50.txt');
    expect(two.text).toContain('f51.txt');
    expect(two.text).not.toContain('f49.txt');
    expect(two.text).not.toContain('Next files');
  });
});

const DESCRIPTION = {
  screens: [
    { title: 'Contact', fields: [{ name: 'email', label: '<i>Email</i>', type: 'email', required: true }] },
    { title: 'Topic', fields: [{ name: 'topic', label: 'Topic', type: 'dropdown', choices: ['Billing', 'Orders'] }] },
  ],
};

describe('Flows page', () => {
  async function flowProject() {
    const p = await t.admin.project('Flows shop');
    const key = (await t.admin.key(p.id, ['flows:read', 'flows:write'])).secret;
    const g = await request(t.app).post('/v1/flows/generate').set('Authorization', `Bearer ${key}`).send({ name: 'contact_form', categories: ['CONTACT_US'], description: DESCRIPTION });
    expect({ status: g.status, body: g.status === 201 ? null : g.body }).toEqual({ status: 201, body: null });
    return p;
  }

  it('When an owner opens a flow, checks it at the channel and publishes it with the form posted twice, then it is published once and audited; the JSON is text', async () => {
    const p = await flowProject();
    const owner = await person(t, p.id, email('owner'));
    const base = `/dashboard/projects/${p.id}/flows`;
    const list = await owner.agent.get(base).expect(200);
    expect(list.text).toMatch(/<a href="[^"]+\/flows\/contact_form">contact_form<\/a>/);
    expect(list.text).toContain('DRAFT');
    const page = await owner.agent.get(`${base}/contact_form`).expect(200);
    expect(page.text).toContain('Flow JSON (version 1, read-only)');
    expect(page.text).toMatch(/<pre class="code" id="flow-json"[^>]*><code>\{\n {2}&quot;version&quot;/);
    expect(page.text).not.toContain('<i>Email');
    expect(page.text).toContain('&lt;i&gt;Email&lt;/i&gt;');
    expect(page.text).toContain('Not checked at the channel yet.');
    expect(page.text).toContain('data-confirm="Publish version 1 of contact_form at Meta? This cannot be undone."');

    const action = `${base}/contact_form/publish`;
    const check = await owner.agent.post(action).type('form').send({ _csrf: csrfOf(page.text), _once: hiddenOf(page.text, '_once', action), step: 'check', version: '1' });
    expect(check.headers.location).toBe(`${base}/contact_form?done=flow_checked`);
    const checked = await owner.agent.get(check.headers.location).expect(200);
    expect(checked.text).toContain('Checked at the channel: nothing was published.');
    expect((await t.db.prisma.flow.findFirstOrThrow({ where: { projectId: p.id } })).status).toBe('DRAFT');

    const forms = [...checked.text.matchAll(/name="_once" value="([a-f0-9]{32})"><input type="hidden" name="step" value="publish"/g)];
    const publish = { _csrf: csrfOf(checked.text), _once: forms[0][1], step: 'publish', version: '1' };
    const first = await owner.agent.post(action).type('form').send(publish);
    const again = await owner.agent.post(action).type('form').send(publish);
    expect([first.status, again.status]).toEqual([303, 303]);
    expect(again.headers.location).toBe(`${base}/contact_form?done=flow_published`);
    const flow = await t.db.prisma.flow.findFirstOrThrow({ where: { projectId: p.id } });
    expect(flow).toMatchObject({ status: 'PUBLISHED', publishedVersion: 1 });
    expect(await audit(p.id, 'flow.publish')).toHaveLength(1);
    const done = await owner.agent.get(first.headers.location);
    expect(done.text).toContain('Version 1 is published.');
    // A fresh form for the version published already: refused with the reason, nothing sent again.
    const stale = await owner.agent.post(action).type('form').send({ ...publish, _once: anotherOnce(forms[0][1]) });
    expect(stale.status).toBe(409);
    expect(stale.text).toContain('Not published: Version 1 of flow');
  });

  it('When a flow does not validate, is written meanwhile, or comes from a member or without CSRF, then publishing is refused with the reason and nothing is sent', async () => {
    const p = await flowProject();
    const owner = await person(t, p.id, email('owner'));
    const base = `/dashboard/projects/${p.id}/flows`;
    const page = await owner.agent.get(`${base}/contact_form`);
    const action = `${base}/contact_form/publish`;
    const form = { _csrf: csrfOf(page.text), _once: hiddenOf(page.text, '_once', action), step: 'publish', version: '1' };
    // A new version written after the page was shown: the page's version no longer publishes.
    const flow = await t.db.prisma.flow.findFirstOrThrow({ where: { projectId: p.id } });
    await t.db.prisma.flowVersion.create({ data: { flowId: flow.id, version: 2, definition: '{"version": "7.1", "screens": [', sha256: 'b'.repeat(64), findings: [], source: 'update' } });
    await t.db.prisma.flow.update({ where: { id: flow.id }, data: { currentVersion: 2 } });
    const moved = await owner.agent.post(action).type('form').send(form);
    expect(moved.status).toBe(409);
    expect(moved.text).toContain('The flow changed since the page was shown (now version 2)');
    const invalid = await owner.agent.get(`${base}/contact_form`).expect(200);
    expect(invalid.text).toContain('INVALID_JSON');
    expect(invalid.text).toContain('does not validate');
    expect(invalid.text).not.toContain('value="publish"');
    const forced = await owner.agent.post(action).type('form').send({ ...form, _once: anotherOnce(form._once), version: '2' });
    expect(forced.status).toBe(400);
    expect(forced.text).toContain('Not published: Version 2 of flow');
    expect(forced.text).toContain('Why it was refused');

    const member = await person(t, p.id, email('member'), 'member');
    const read = await member.agent.get(`${base}/contact_form`).expect(200);
    expect(read.text).toContain('Your role (member) reads flows');
    expect(read.text).not.toContain('name="step"');
    expect((await member.agent.post(action).type('form').send({ _csrf: csrfOf(read.text), _once: 'c'.repeat(32), step: 'publish', version: '2' })).status).toBe(403);
    expect((await owner.agent.post(action).type('form').send({ _once: 'a'.repeat(32), step: 'publish', version: '2' })).status).toBe(403);
    expect((await owner.agent.post(action).type('form').send({ _csrf: 'stale', _once: 'a'.repeat(32), step: 'publish', version: '2' })).status).toBe(403);
    expect(await t.db.prisma.flow.findFirstOrThrow({ where: { projectId: p.id } })).toMatchObject({ status: 'DRAFT', channelDraftId: null, publishedVersion: null });
    expect(await audit(p.id, 'flow.publish')).toHaveLength(0);
  });

  it('When a project has more flows than a page shows and a name holds markup, then the list pages by keyset and the name is text', async () => {
    const p = await t.admin.project('Many flows');
    for (let i = 0; i < 26; i++) {
      const name = i === 0 ? `a${HOSTILE}` : `flow_${String(i).padStart(2, '0')}`;
      const f = await t.db.prisma.flow.create({ data: { id: `flw_pg${p.id.slice(-6)}${i}`, projectId: p.id, name, categories: ['OTHER'], status: 'DRAFT', currentVersion: 1 } });
      await t.db.prisma.flowVersion.create({ data: { flowId: f.id, version: 1, definition: `{"title": "${i === 0 ? '<b>x</b>' : 'x'}"}`, sha256: 'c'.repeat(64), findings: [], source: 'generate' } });
    }
    const owner = await person(t, p.id, email('owner'));
    const base = `/dashboard/projects/${p.id}/flows`;
    const one = await owner.agent.get(base).expect(200);
    expect(one.text).toContain('a&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(one.text).not.toContain('<script>alert');
    expect(one.text).toContain('flow_24');
    expect(one.text).not.toContain('flow_25');
    const next = /href="([^"]+\?cursor=[^"]+)">Next flows/.exec(one.text)![1];
    const two = await owner.agent.get(next).expect(200);
    expect(two.text).toContain('flow_25');
    expect(two.text).not.toContain('flow_24');
    const hostile = await owner.agent.get(`${base}/${encodeURIComponent(`a${HOSTILE}`)}`).expect(200);
    expect(hostile.text).toContain('&quot;title&quot;: &quot;&lt;b&gt;x&lt;/b&gt;&quot;');
    expect(hostile.text).not.toContain('<b>x</b>');
    expect((await owner.agent.get(`${base}/nothing`)).status).toBe(404);
  });
});
