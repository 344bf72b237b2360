/**
 * The simulator keeps the statuses it owes across its own restart and delivers them after it comes
 * back, as Meta retries them (issue 44, item 10: a service and its bundled simulator killed with
 * SIGKILL mid-campaign left 5 sends `sent` and 18 `delivered` for good). Against a real local
 * webhook receiver: a stopped simulator started again on its data folder, and a standalone
 * simulator process (`simulator/main.ts`) killed with SIGKILL and started again.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import request from 'supertest';
import { createSimulator, type Simulator } from '../../simulator/app.js';
import { Receiver } from '../support/receiver.js';

const dirs: string[] = [];
const folder = () => {
  const d = mkdtempSync(path.join(os.tmpdir(), 'sim-owed-'));
  dirs.push(d);
  return d;
};
let rx: Receiver;
beforeAll(async () => {
  rx = await Receiver.start();
});
afterAll(async () => {
  await rx.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The statuses of `wamid` that reached a path, in arrival order (from its `from`-th request on). */
function statusesAt(p: string, wamid: string, from = 0): Array<Record<string, any>> {
  return rx.at(p).slice(from)
    .flatMap((r) => (r.body?.entry?.[0]?.changes?.[0]?.value?.statuses ?? []) as Array<Record<string, any>>)
    .filter((s) => s.id === wamid);
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const text = (to: string, ref: string) => ({ messaging_product: 'whatsapp', recipient_type: 'individual', to, type: 'text', text: { body: 'hello' }, biz_opaque_callback_data: ref });

async function listen(sim: Simulator): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(sim.app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      await sim.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('owed statuses across a restart', () => {
  it('When the simulator stops with statuses its webhook has not taken, then started again on its data folder it delivers them (same objects) and carries on to read; once taken they are not sent again', async () => {
    const dir = folder();
    const hook = '/stopped';
    rx.on(hook, { kind: 'status', status: 503 });
    let sim = createSimulator({ dataDir: dir, autoStatusDelaysMs: { sent: 0, delivered: 50, read: 50 }, limits: { callbackRetryDelaysMs: [60_000] } });
    let s = await listen(sim);
    const pn = (await request(s.url).post('/_sim/phone-numbers').send({ callback_url: rx.url + hook, app_secret: 'sec' }).expect(201)).body;
    const wamids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await request(s.url).post(`/v26.0/${pn.phone_number_id}/messages`).set('Authorization', `Bearer ${pn.access_token}`).send(text(`1555123400${i}`, `ref-${i}`)).expect(200);
      wamids.push(res.body.messages[0].id);
    }
    // Each message's `sent` was offered and refused; the retry is a minute away: owed.
    await until(() => wamids.every((w) => statusesAt(hook, w).some((x) => x.status === 'sent')), 5_000, 'the refused sent statuses');
    const firstSent = new Map(wamids.map((w) => [w, statusesAt(hook, w).find((x) => x.status === 'sent')!]));
    await s.close();

    // From here on the webhook takes what it is offered.
    const refused = rx.at(hook).length;
    rx.on(hook, { kind: 'status', status: 200 });
    sim = createSimulator({ dataDir: dir, autoStatusDelaysMs: { sent: 0, delivered: 50, read: 50 }, limits: { callbackRetryDelaysMs: [100, 100, 100] } });
    s = await listen(sim);
    try {
      await until(() => wamids.every((w) => statusesAt(hook, w, refused).some((x) => x.status === 'read')), 10_000, 'every message read after the restart');
      for (const [i, w] of wamids.entries()) {
        const got = statusesAt(hook, w, refused);
        expect(['sent', 'delivered', 'read'].every((st) => got.some((x) => x.status === st))).toBe(true);
        // The owed `sent` went out again as it was (its timestamp kept), with the send's reference.
        expect(got.find((x) => x.status === 'sent')).toEqual(firstSent.get(w));
        expect(got.every((x) => x.biz_opaque_callback_data === `ref-${i}`)).toBe(true);
      }
      await new Promise((r) => setTimeout(r, 200));
      const taken = rx.at(hook).length;
      await s.close();
      // Nothing is owed any more: a third start sends nothing.
      sim = createSimulator({ dataDir: dir, autoStatusDelaysMs: { sent: 0, delivered: 50, read: 50 } });
      s = await listen(sim);
      await new Promise((r) => setTimeout(r, 300));
      expect(rx.at(hook).length).toBe(taken);
    } finally {
      await s.close();
    }
  }, 30_000);

  it('When a standalone simulator is killed with SIGKILL mid-progression, then started again it delivers every owed status: each message reaches read', async () => {
    const dir = folder();
    const hook = '/killed';
    const env = { SIMULATOR_DATA_DIR: dir, SIMULATOR_AUTO_STATUS: '1500,1500', SIMULATOR_LOG: 'warn', SIMULATOR_CALLBACK_RETRY_SCALE: '0.01' };
    let child = await startSimulatorProcess(env);
    try {
      const pn = (await request(child.url).post('/_sim/phone-numbers').send({ callback_url: rx.url + hook, app_secret: 'sec' }).expect(201)).body;
      // The number reaches the snapshot (written at most every 500 ms) before the kill.
      await until(() => existsSync(path.join(dir, 'state.json')) && readFileSync(path.join(dir, 'state.json'), 'utf8').includes(pn.phone_number_id), 5_000, 'the snapshot');
      const wamids: string[] = [];
      for (let i = 0; i < 6; i++) {
        const res = await request(child.url).post(`/v26.0/${pn.phone_number_id}/messages`).set('Authorization', `Bearer ${pn.access_token}`).send(text(`1555123410${i}`, `kill-${i}`)).expect(200);
        wamids.push(res.body.messages[0].id);
      }
      // Killed once the sends are `sent` at the webhook, before any is delivered.
      await until(() => wamids.every((w) => statusesAt(hook, w).some((x) => x.status === 'sent')), 5_000, 'the sent statuses');
      expect(wamids.some((w) => statusesAt(hook, w).some((x) => x.status !== 'sent'))).toBe(false);
      child.kill('SIGKILL');
      await child.exited;

      child = await startSimulatorProcess(env);
      await until(() => wamids.every((w) => statusesAt(hook, w).some((x) => x.status === 'read')), 20_000, 'every message read after the kill');
      for (const [i, w] of wamids.entries()) {
        expect(statusesAt(hook, w).some((x) => x.status === 'delivered')).toBe(true);
        expect(statusesAt(hook, w).every((x) => x.biz_opaque_callback_data === `kill-${i}`)).toBe(true);
      }
    } finally {
      child.kill('SIGKILL');
      await child.exited;
    }
  }, 60_000);
});

/** `simulator/main.ts` in a process of its own, on a free port. */
async function startSimulatorProcess(env: Record<string, string>): Promise<{ url: string; kill(signal: NodeJS.Signals): void; exited: Promise<void> }> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'simulator/main.ts'], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: { ...process.env, SIMULATOR_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the simulator did not start: ${out}`)), 20_000);
    const read = (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => reject(new Error(`the simulator exited (${code}): ${out}`)));
  });
  return { url, kill: (signal) => void child.kill(signal), exited };
}
