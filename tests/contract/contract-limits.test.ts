/**
 * Every limit the contract states lives only there: loosening or tightening one in a copy of the
 * contract is followed by the whole service (the validator and the contact rules behind it).
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadContract } from '../../http/contract.js';
import { startTestApp, type TestApp } from '../support/app.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const apps: TestApp[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const a of apps) await a.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function appWithNameLimit(limit: number): Promise<TestApp> {
  const text = await readFile(path.join(root, 'openapi.yaml'), 'utf8');
  const edited = text.replace('name: { type: string, minLength: 1, maxLength: 200 }\n        tags:', `name: { type: string, minLength: 1, maxLength: ${limit} }\n        tags:`);
  expect(edited).not.toBe(text);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-limits-'));
  dirs.push(dir);
  await writeFile(path.join(dir, 'openapi.yaml'), edited);
  const t = await startTestApp({ contract: loadContract(path.join(dir, 'openapi.yaml'), { requireScopes: true }) });
  apps.push(t);
  return t;
}

async function renameContact(t: TestApp, length: number) {
  const project = await t.admin.project('limits');
  const key = (await t.admin.key(project.id, ['contacts:write'])).secret;
  const contact = await t.db.prisma.contact.create({ data: { projectId: project.id, phone: `1555${Date.now() % 10_000_000}` } });
  return request(t.app).patch(`/v1/contacts/${contact.id}`).set('Authorization', `Bearer ${key}`).send({ name: 'n'.repeat(length) });
}

describe('limits come from the contract', () => {
  it('When the contract loosens the contact name to 300 characters, then a 250-character name is accepted', async () => {
    const t = await appWithNameLimit(300);
    const res = await renameContact(t, 250);
    expect(res.status).toBe(200);
    expect(res.body.data.contact.name).toHaveLength(250);
  });

  it('When the contract tightens it to 50, then a 60-character name is refused naming the field', async () => {
    const t = await appWithNameLimit(50);
    const res = await renameContact(t, 60);
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields[0].field).toBe('name');
  });
});
