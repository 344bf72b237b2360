/**
 * `npm start` as a user or a supervisor runs it: in its own process group, on the embedded
 * defaults (a data folder of its own, free ports). A SIGTERM to the npm process (what a supervisor
 * sends) must stop the service and its embedded PostgreSQL, not leave them running without a parent.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { embeddedServiceEnv, tempFolder } from '../support/local.js';
import { setTimeout as sleep } from 'node:timers/promises';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let dir: string | undefined;
let npm: ChildProcess | undefined;

afterAll(async () => {
  if (npm?.pid) {
    try {
      process.kill(-npm.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

const answers = (port: number) =>
  fetch(`http://127.0.0.1:${port}/v1/openapi.json`).then(
    (r) => r.status,
    () => 0,
  );

describe('npm start', () => {
  it('When the npm process gets SIGTERM, then the service and its embedded PostgreSQL stop', async () => {
    dir = await tempFolder('svc-npmstart-');
    const { env, port } = await embeddedServiceEnv(path.join(dir, 'data'));
    npm = spawn('npm', ['start'], { cwd: root, env, detached: true, stdio: 'ignore' });
    const until = Date.now() + 60_000;
    while ((await answers(port)) !== 200) {
      if (Date.now() > until) throw new Error('npm start did not serve within 60 s');
      await sleep(200);
    }
    const pidFile = path.join(dir, 'data', 'pg', 'postmaster.pid');
    expect(existsSync(pidFile)).toBe(true);

    process.kill(npm.pid!, 'SIGTERM');
    const stopBy = Date.now() + 20_000;
    while ((await answers(port)) !== 0 || existsSync(pidFile)) {
      if (Date.now() > stopBy) throw new Error('the service or its PostgreSQL still runs 20 s after SIGTERM to npm');
      await sleep(200);
    }
    expect(await answers(port)).toBe(0);
    expect(existsSync(pidFile)).toBe(false);
  }, 120_000);

  it('When SIGTERM reaches the service during its start-up (PostgreSQL up, HTTP not yet), then it still stops, PostgreSQL included', async () => {
    const dir2 = await tempFolder('svc-npmstart-early-');
    try {
      const { env, port } = await embeddedServiceEnv(path.join(dir2, 'data'));
      const svc = spawn('npm', ['start'], { cwd: root, env, detached: true, stdio: 'ignore' });
      const pidFile = path.join(dir2, 'data', 'pg', 'postmaster.pid');
      try {
        const until = Date.now() + 60_000;
        while (!existsSync(pidFile)) {
          if (Date.now() > until) throw new Error('the embedded PostgreSQL did not start within 60 s');
          await sleep(50);
        }
        // To npm alone, which passes it on to the service (not to PostgreSQL, which only the service stops).
        process.kill(svc.pid!, 'SIGTERM');
        const stopBy = Date.now() + 30_000;
        while ((await answers(port)) !== 0 || existsSync(pidFile)) {
          if (Date.now() > stopBy) throw new Error('the service or its PostgreSQL still runs 30 s after a SIGTERM during start-up');
          await sleep(200);
        }
        expect(existsSync(pidFile)).toBe(false);
      } finally {
        try {
          process.kill(-svc.pid!, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
    } finally {
      await rm(dir2, { recursive: true, force: true });
    }
  }, 120_000);
});
