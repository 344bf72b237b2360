/**
 * Contact CSV import: streamed, normalised to E.164 with a default country, duplicates merged,
 * `opted_in` strict with when and from which import, every line not imported reported with its
 * line number and reason, re-import changes nothing; bad files get 400 invalid_csv.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { projectWithKey } from '../support/broadcasts.js';
import { importsSettled } from '../../lib/contacts-import/imports.js';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { dataDir: mkdtempSync(path.join(os.tmpdir(), 'imports-')) } });
});
afterAll(async () => {
  await importsSettled();
  await t.close();
});

function upload(key: string, body: string | Buffer, query = '', type = 'text/csv') {
  return request(t.app).post(`/v1/contact-imports${query}`).set('Authorization', `Bearer ${key}`).set('Content-Type', type).send(body);
}

async function finished(key: string, id: string) {
  await importsSettled();
  const res = await request(t.app).get(`/v1/contact-imports/${id}`).set('Authorization', `Bearer ${key}`);
  expect(res.status).toBe(200);
  return res.body.data.import;
}

async function report(key: string, id: string) {
  return (await request(t.app).get(`/v1/contact-imports/${id}/rows?limit=100`).set('Authorization', `Bearer ${key}`)).body.data;
}

const FILE = [
  'Number,Name,Tags,Opted_In,Email',
  '+1 415 555 0101,Ada,vip;new,yes,ada@example.com',
  '(415) 555-0102,Bo,,no,',
  '415-555-0103,"Cy, Jr.",vip|old,,',
  '+14155550101,Ada L.,repeat,true,',
  'not a number,X,,,',
  '+14155550104,Dee,,maybe,',
  ',Nobody,,,',
  '"+14155550105,Eve,,1,',
  '',
].join('\r\n');

describe('createContactImport', () => {
  it('When a CSV is imported, then numbers are normalised, duplicates merged, opt-in strict, and every other line reported with its reason', async () => {
    const { key, project } = await projectWithKey(t);
    const res = await upload(key, FILE, '?default_country=1&filename=list.csv');
    expect(res.status).toBe(202);
    expect(res.body.data.import).toMatchObject({ status: expect.stringMatching(/queued|running|completed/), filename: 'list.csv', default_country: '1', ignored_columns: ['Email'] });
    const done = await finished(key, res.body.data.import.id);
    expect(done).toMatchObject({ status: 'completed', counts: { rows: 8, created: 3, updated: 0, unchanged: 0, merged: 1, rejected: 4 }, progress: { fraction: 1 } });
    const rows = (await report(key, done.id)).rows;
    expect(rows.map((r: any) => [r.line, r.outcome])).toEqual([[5, 'merged'], [6, 'rejected'], [7, 'rejected'], [8, 'rejected'], [9, 'rejected']]);
    expect(rows[0].reason).toMatch(/duplicate of line 2/);
    expect(rows[2].reason).toMatch(/opted_in "maybe"/);
    expect(rows[3].reason).toMatch(/no number/);
    expect(rows[4].reason).toMatch(/quote/);
    const contacts = await t.db.pool.query(
      `SELECT phone, name, tags, opted_in, opted_in_at IS NOT NULL AS has_at, opt_in_import_id, opted_out_at IS NOT NULL AS out FROM contacts WHERE project_id = $1 ORDER BY phone`,
      [project.id],
    );
    expect(contacts.rows).toEqual([
      { phone: '14155550101', name: 'Ada', tags: ['vip', 'new', 'repeat'], opted_in: true, has_at: true, opt_in_import_id: done.id, out: false },
      { phone: '14155550102', name: 'Bo', tags: [], opted_in: false, has_at: false, opt_in_import_id: null, out: true },
      { phone: '14155550103', name: 'Cy, Jr.', tags: ['vip', 'old'], opted_in: false, has_at: false, opt_in_import_id: null, out: false },
    ]);
    // The same file again changes nothing.
    const again = await finished(key, (await upload(key, FILE, '?default_country=1')).body.data.import.id);
    expect(again.counts).toMatchObject({ created: 0, updated: 0, unchanged: 3, merged: 1, rejected: 4 });
    const after = await t.db.pool.query(`SELECT opt_in_import_id FROM contacts WHERE project_id = $1 AND phone = '14155550101'`, [project.id]);
    expect(after.rows[0].opt_in_import_id).toBe(done.id);
  });

  it('When a number has no country code and no default_country is given, then the line is rejected (never guessed)', async () => {
    const { key } = await projectWithKey(t);
    const done = await finished(key, (await upload(key, 'number\n4155550101\n+4915112345678\n')).body.data.import.id);
    expect(done.counts).toMatchObject({ created: 1, rejected: 1 });
    expect((await report(key, done.id)).rows[0]).toMatchObject({ line: 2, outcome: 'rejected', number: '4155550101' });
  });

  it('When bytes are not UTF-8 on a line, then that line is reported and the others imported', async () => {
    const { key } = await projectWithKey(t);
    const body = Buffer.concat([Buffer.from('\uFEFFnumber,name\n+14155550111,Ann\n+14155550112,'), Buffer.from([0xff, 0xfe, 0x41]), Buffer.from('\n')]);
    const done = await finished(key, (await upload(key, body)).body.data.import.id);
    expect(done.counts).toMatchObject({ rows: 2, created: 1, rejected: 1 });
    expect((await report(key, done.id)).rows[0]).toMatchObject({ line: 3, reason: expect.stringMatching(/UTF-8/) });
  });

  it.each([
    ['', 'invalid_csv'],
    ['name,tags\nAda,vip\n', 'invalid_csv'],
    ['number\n', 'invalid_csv'],
    ['\u0000\u0001PK\u0003\u0004binary', 'invalid_csv'],
  ])('When the file is %j, then 400 %s and no import is stored', async (body, code) => {
    const { key, project } = await projectWithKey(t);
    const res = await upload(key, body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(code);
    expect(await t.db.prisma.contactImport.count({ where: { projectId: project.id } })).toBe(0);
  });

  it('When the body is not text/csv, or the key lacks contacts:write, then 415 / 403', async () => {
    const { key, project } = await projectWithKey(t);
    expect((await upload(key, '{"number":1}', '', 'application/json')).status).toBe(415);
    const reader = (await t.admin.key(project.id, ['contacts:read'])).secret;
    expect((await upload(reader, 'number\n+14155550101\n')).body.error.code).toBe('insufficient_scope');
  });

  it('When an operator imports for a project, then the same job runs and its report is readable on the operator API', async () => {
    const { project } = await projectWithKey(t);
    const res = await request(t.app).post(`/admin/projects/${project.id}/contact-imports?default_country=44`).set('Authorization', `Bearer ${t.adminToken}`)
      .set('Content-Type', 'text/csv').send('number,opted_in\n07700900123,yes\n07700900123,yes\nbad,\n');
    expect(res.status).toBe(202);
    await importsSettled();
    const got = await t.admin.call('get', `/admin/contact-imports/${res.body.data.import.id}`);
    expect(got.import).toMatchObject({ status: 'completed', counts: { created: 1, merged: 1, rejected: 1 } });
    expect(got.rows.map((r: any) => r.line)).toEqual([3, 4]);
  });
});
