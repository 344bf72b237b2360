/**
 * `npm start`'s shutdown: the service started as a process (server.ts, bundled simulator, a
 * scratch database) stops on SIGTERM even while clients keep it busy: requests in flight get
 * SHUTDOWN_GRACE_MS, then their connections are cut, and the process exits 0 (so the embedded
 * PostgreSQL and the job runner are stopped, not orphaned by a SIGKILL).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createScratchDatabase } from '../support/db.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let db: { url: string; drop(): Promise<void> };
beforeAll(async () => {
  db = await createScratchDatabase('shutdown');
});
afterAll(async () => {
  await db?.drop();
});

function start(): Promise<{ child: ChildProcess; base: string; output: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      PORT: '0',
      HOST: '127.0.0.1',
      SIMULATOR_PORT: '0',
      GRAPH_BASE_URL: '',
      SIMULATOR_URL: '',
      ADMIN_TOKEN: 'adm_shutdown_test_0123456789abcdef',
      ENCRYPTION_KEY: '11'.repeat(32),
      SHUTDOWN_GRACE_MS: '1000',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready:\n${out}`)), 60_000);
    const poll = setInterval(() => {
      const m = /listening on http:\/\/localhost:(\d+)/.exec(out);
      if (m) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve({ child, base: `http://127.0.0.1:${m[1]}`, output: () => out });
      }
    }, 50);
    child.once('exit', (code) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`exited with ${code}:\n${out}`));
    });
  });
}

describe('shutdown', () => {
  it('When SIGTERM arrives while a client is busy on a keep-alive connection and another stalls mid-body, then the process exits 0 after the grace', async () => {
    const { child, base, output } = await start();
    // One client keeps its keep-alive connection busy, request after request.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let busy = true;
    let answered = 0;
    const hammer = (async () => {
      while (busy) {
        await new Promise<void>((resolve) => {
          const req = http.get(`${base}/v1/ping`, { agent }, (res) => {
            res.resume();
            res.on('end', () => {
              answered++;
              resolve();
            });
          });
          req.on('error', () => resolve());
        });
      }
    })();
    // Another sends half a body and stalls: its request never completes by itself.
    const stalled = http.request(`${base}/channel/prj_stalled/webhook`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': '1000' } });
    stalled.on('error', () => undefined);
    stalled.write('{"object":');
    while (answered < 5) await new Promise((r) => setTimeout(r, 20));

    child.removeAllListeners('exit');
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const t0 = Date.now();
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([exited, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), 15_000)))]);
    clearTimeout(timer);
    busy = false;
    await hammer;
    agent.destroy();
    stalled.destroy();
    if (code === 'timeout') child.kill('SIGKILL');
    expect({ code, output: code === 0 ? '' : output() }).toEqual({ code: 0, output: '' });
    expect(Date.now() - t0).toBeLessThan(10_000);
  }, 90_000);
});
