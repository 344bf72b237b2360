/**
 * Contact import report rows: every rejected line has a stable `code` beside a text true to the
 * line (`+999`, `+0000000000`, `++14155551234` are not "needs default_country"), and duplicates
 * fill a name only where none is set: never over an earlier line's name, nor over a contact's name
 * from before the import, within a batch or across batches.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app.js';
import { projectWithKey, seedContacts } from '../support/broadcasts.js';
import { importsSettled } from '../../lib/contacts-import/imports.js';
import { classifyNumber } from '../../lib/contacts-import/reasons.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { dataDir: mkdtempSync(path.join(os.tmpdir(), 'import-rows-')) } });
});
afterAll(async () => {
  await importsSettled();
  await t.close();
});

async function imported(key: string, body: string | Buffer, query = '') {
  const res = await request(t.app).post(`/v1/contact-imports${query}`).set('Authorization', `Bearer ${key}`).set('Content-Type', 'text/csv').send(body);
  expect(res.status).toBe(202);
  await importsSettled();
  const id = res.body.data.import.id;
  const imp = (await request(t.app).get(`/v1/contact-imports/${id}`).set('Authorization', `Bearer ${key}`)).body.data.import;
  const rows = (await request(t.app).get(`/v1/contact-imports/${id}/rows?limit=100`).set('Authorization', `Bearer ${key}`)).body.data.rows;
  return { imp, rows };
}

const nameOf = async (projectId: string, phone: string) =>
  (await t.db.pool.query<{ name: string | null }>('SELECT name FROM contacts WHERE project_id = $1 AND phone = $2', [projectId, phone])).rows[0]?.name;

describe('rejection codes', () => {
  it('When lines are wrong in each possible way, then each has its code and a text true to the line', async () => {
    const { key, project } = await projectWithKey(t);
    const lines = [
      'number,name,tags,opted_in',
      '+999,A,,', // 2
      '+0000000000,B,,', // 3
      '++14155551234,C,,', // 4
      '4155550101,D,,', // 5: plausible, no country code
      'call me,E,,', // 6
      ',F,,', // 7
      '+14155550199,G,,maybe', // 8
      `+14155550198,${'n'.repeat(201)},,`, // 9
      `+14155550197,H,${'t'.repeat(101)},`, // 10
      '+1415"5550196,I,,', // 11
      '+1234567890123456,J,,', // 12: 16 digits
      '+14155550195,K,,', // 13: imported
      '+1 (415) 555-0195,K2,,', // 14: duplicate
    ];
    const body = Buffer.concat([Buffer.from(lines.join('\n') + '\n'), Buffer.from('+14155550194,'), Buffer.from([0xff, 0xfe]), Buffer.from(',,\n')]); // 15
    const { imp, rows } = await imported(key, body);
    expect(imp.counts).toMatchObject({ rows: 14, created: 1, merged: 1, rejected: 12 });
    const byLine = Object.fromEntries(rows.map((r: any) => [r.line, r]));
    expect(rows.map((r: any) => [r.line, r.outcome, r.code])).toEqual([
      [2, 'rejected', 'invalid_number'], [3, 'rejected', 'invalid_number'], [4, 'rejected', 'invalid_number'], [5, 'rejected', 'missing_country_code'],
      [6, 'rejected', 'invalid_number'], [7, 'rejected', 'missing_number'], [8, 'rejected', 'invalid_opted_in'], [9, 'rejected', 'name_too_long'],
      [10, 'rejected', 'tag_too_long'], [11, 'rejected', 'malformed_csv'], [12, 'rejected', 'invalid_number'], [14, 'merged', 'duplicate'],
      [15, 'rejected', 'invalid_encoding'],
    ]);
    expect(byLine[2].reason).toBe('"+999" is not a phone number: 3 digits; a number with its country code has 8 to 15');
    expect(byLine[3].reason).toBe('"+0000000000" is not a phone number: a country calling code never starts with 0');
    expect(byLine[4].reason).toBe('"++14155551234" is not a phone number: more than one + before the digits');
    expect(byLine[5].reason).toBe('"4155550101" has no country code: write it with + (such as +1 415 555 0101) or give default_country');
    expect(byLine[12].reason).toMatch(/16 digits; a number with its country code has at most 15/);
    for (const line of [2, 3, 4, 6, 12]) expect(byLine[line].reason).not.toMatch(/default_country/);
    expect(byLine[14].reason).toBe('duplicate of line 13: merged into the same contact');
    expect(await nameOf(project.id, '14155550195')).toBe('K');
  });

  it('When a national number meets a default_country, then it is imported; a short one says its length with the country code', async () => {
    const { key } = await projectWithKey(t);
    const { imp, rows } = await imported(key, 'number\n4155550101\n12\n', '?default_country=1');
    expect(imp.counts).toMatchObject({ created: 1, rejected: 1 });
    expect(rows[0]).toMatchObject({ line: 3, code: 'invalid_number', reason: '"12" is not a phone number: 3 digits with country code 1; a number with its country code has 8 to 15' });
  });

  it.each([
    ['+999', undefined, 'invalid_number'],
    ['+0000000000', undefined, 'invalid_number'],
    ['++14155551234', undefined, 'invalid_number'],
    ['+1415+5551234', undefined, 'invalid_number'],
    ['0044 7700 900123', undefined, '447700900123'],
    ['07700 900123', '44', '447700900123'],
    ['07700 900123', undefined, 'missing_country_code'],
    ['', undefined, 'invalid_number'],
  ])('classifyNumber(%j, %j) → %s', (raw, country, expected) => {
    const r = classifyNumber(raw, country);
    expect('phone' in r ? r.phone : r.code).toBe(expected);
  });
});

describe('duplicates and names', () => {
  it('When a later line repeats a number, then its name fills only a contact without one; a name set before the import stays', async () => {
    const { key, project } = await projectWithKey(t);
    await seedContacts(t, project.id, [{ phone: '14155551072', name: 'Chen 72' }, { phone: '14155551073', name: null }]);
    const { imp } = await imported(key, [
      'number,name,tags',
      '+14155551072,Dup 24,a', // existing contact with a name: kept
      '+14155551073,,b', // existing without a name, no name here
      '+14155551073,Filled,c', // a later line fills it
      '+14155551074,First,', // new contact
      '+14155551074,Second,', // does not replace the first line's name
      '+14155551075,,', // new contact without a name
      '+14155551075,Later,', // filled by the later line
    ].join('\n'));
    expect(imp.counts).toMatchObject({ rows: 7, created: 2, merged: 3 });
    expect(await nameOf(project.id, '14155551072')).toBe('Chen 72');
    expect(await nameOf(project.id, '14155551073')).toBe('Filled');
    expect(await nameOf(project.id, '14155551074')).toBe('First');
    expect(await nameOf(project.id, '14155551075')).toBe('Later');
    const tags = (await t.db.pool.query('SELECT tags FROM contacts WHERE project_id = $1 AND phone = $2', [project.id, '14155551072'])).rows[0].tags;
    expect(tags).toEqual(['a']);
  });

  it('When the repeat is in a later batch (over 1,000 lines apart), then it merges the same way: tags added, a name filled, never replaced', async () => {
    const { key, project } = await projectWithKey(t);
    const filler = Array.from({ length: 1100 }, (_, i) => `+1555${String(2000000 + i)}`);
    const { imp, rows } = await imported(key, [
      'number,name,tags',
      '+14155551080,Original,x',
      '+14155551081,,',
      ...filler,
      '+14155551080,Replacement,y',
      '+14155551081,Filled,z',
    ].join('\n'));
    expect(imp.counts).toMatchObject({ rows: 1104, created: 1102, merged: 2, rejected: 0 });
    expect(rows.map((r: any) => [r.code, r.reason])).toEqual([
      ['duplicate', 'duplicate of line 2: merged into the same contact'],
      ['duplicate', 'duplicate of line 3: merged into the same contact'],
    ]);
    expect(await nameOf(project.id, '14155551080')).toBe('Original');
    expect(await nameOf(project.id, '14155551081')).toBe('Filled');
    expect((await t.db.pool.query('SELECT tags FROM contacts WHERE project_id = $1 AND phone = $2', [project.id, '14155551080'])).rows[0].tags).toEqual(['x', 'y']);
  });
});
