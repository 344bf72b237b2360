/** The operator CLI for campaigns and contact imports: `ops broadcasts list|show|approve|cancel|throughput`, `ops contacts import`. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Server } from 'node:http';
import type net from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app.js';
import { api, projectWithKey, seedContacts, template } from '../support/broadcasts.js';
import { runOps } from '../support/ops.js';

let t: TestApp;
let server: Server;
let url: string;
const dir = mkdtempSync(path.join(os.tmpdir(), 'ops-bc-'));

beforeAll(async () => {
  t = await startTestApp({ config: { dataDir: dir } });
  server = await new Promise<Server>((resolve) => {
    const s = t.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await t.close();
});

const ops = (args: string[]) => runOps(url, t.adminToken, args);

describe('ops broadcasts', () => {
  it('When an operator lists the queue, approves at a time, shows and cancels, then each command answers with the campaign', async () => {
    const { project, key } = await projectWithKey(t);
    await template(t, project.id, 'notice', 'Account updated', 'UTILITY');
    await seedContacts(t, project.id, [{ phone: '14155550301' }, { phone: '14155550302' }]);
    const id = (await api(t, key).post('/v1/broadcasts', { name: 'Ops test', template_name: 'notice', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } } })).body.data.broadcast.id;
    const list = await ops(['broadcasts', 'list', '--status', 'pending_approval', '--project', project.id]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(id);
    const approved = await ops(['broadcasts', 'approve', id, '--at', '2026-03-05T10:00:00Z', '--by', 'Ana']);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toMatch(/Approved: 2 recipients/);
    expect((await ops(['broadcasts', 'show', id])).stdout).toMatch(/status:\s+scheduled/);
    const json = JSON.parse((await ops(['broadcasts', 'show', id, '--json'])).stdout);
    expect(json.broadcast).toMatchObject({ status: 'scheduled', approved_by: 'Ana' });
    expect((await ops(['broadcasts', 'cancel', id, '--reason', 'typo'])).stdout).toMatch(/Canceled/);
    const again = await ops(['broadcasts', 'cancel', id]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/conflict|canceled/);
    // No channel number in this app (no simulator): the setting has nothing to apply to.
    const throughput = await ops(['broadcasts', 'throughput', project.id, '250']);
    expect(throughput.code).toBe(1);
    expect(throughput.stderr).toMatch(/has no channel number/);
    expect((await ops(['broadcasts', 'throughput', project.id, '5000'])).code).toBe(2);
  });

  it('When an operator imports a CSV file, then progress ends completed and the line report is printed', async () => {
    const { project } = await projectWithKey(t);
    const file = path.join(dir, 'people.csv');
    writeFileSync(file, 'number,name,opted_in\n+14155550401,Ana,yes\n+14155550402,Bo,perhaps\n');
    const run = await ops(['contacts', 'import', project.id, file]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/completed: 2 rows; created 1/);
    expect(run.stdout).toMatch(/3\s+rejected\s+opted_in "perhaps"/);
  });
});
