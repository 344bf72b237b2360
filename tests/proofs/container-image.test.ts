/**
 * The service's image as an operator runs it (issue 48; Dockerfile, docs/deploy.md): started on the
 * host's network against this test's own database, it
 * - exits at once with status 78 naming the setting when a production setting is missing, and
 *   names an invalid one the same way (no restart loop hides it);
 * - waits for a PostgreSQL that does not answer yet, says so, and is ready (/readyz, Docker's
 *   HEALTHCHECK "healthy") only once it answers;
 * - stops on SIGTERM (docker stop) within 10 s with exit status 0.
 * Runs only where Docker runs and the image is built (scripts/ci/compose.sh builds
 * messaging-service:ci; IMAGE overrides): building it takes minutes, so this test never does and
 * says why it skipped. The time to ready is printed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { freePort } from '../support/local.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { createScratchDatabase } from '../support/db.js';
import { latePostgres } from '../support/late-postgres.js';

const IMAGE = process.env.IMAGE ?? 'messaging-service:ci';

function docker(args: string[], timeoutMs = 30_000): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('docker', args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: `${stdout}${stderr}` });
    });
  });
}

async function why(): Promise<string | undefined> {
  const info = await docker(['info', '--format', '{{.ServerVersion}}'], 10_000);
  if (info.code !== 0) return `no Docker daemon answers here (${info.out.trim().split('\n')[0] || 'docker not found'})`;
  const image = await docker(['image', 'inspect', '-f', '{{.Size}}', IMAGE], 10_000);
  if (image.code !== 0) return `the image ${IMAGE} is not built (scripts/ci/compose.sh builds it; this test does not build for minutes)`;
  return undefined;
}

const skipReason = await why();
if (skipReason) console.log(`container-image: skipped: ${skipReason}`);
const describeIf = skipReason ? describe.skip : describe;

const names: string[] = [];
let scratch: { url: string; drop(): Promise<void> } | undefined;

/** Starts the image detached; returns the container's name. */
async function start(env: Record<string, string>): Promise<string> {
  const name = `svc-test-${randomBytes(4).toString('hex')}`;
  names.push(name);
  const args = ['run', '-d', '--name', name, '--network', 'host', '--read-only', '--tmpfs', '/tmp', '--tmpfs', '/data'];
  for (const [k, v] of Object.entries(env)) args.push('-e', `${k}=${v}`);
  const res = await docker([...args, IMAGE]);
  if (res.code !== 0) throw new Error(`docker run: ${res.out}`);
  return name;
}

async function waitExit(name: string, timeoutMs: number): Promise<number> {
  const res = await docker(['wait', name], timeoutMs);
  if (res.code !== 0) throw new Error(`docker wait ${name}: ${res.out}`);
  return Number(res.out.trim());
}

const logs = async (name: string) => (await docker(['logs', name])).out;

function productionEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: scratch!.url,
    ADMIN_TOKEN: 'adm_image_' + randomBytes(16).toString('hex'),
    ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    GRAPH_BASE_URL: 'http://127.0.0.1:9',
    ...overrides,
  };
}

beforeAll(async () => {
  if (!skipReason) scratch = await createScratchDatabase('image');
}, 60_000);

afterAll(async () => {
  for (const name of names) await docker(['rm', '-f', name]);
  await scratch?.drop().catch(() => undefined);
}, 60_000);

describeIf('the service image', () => {
  it('When a production setting is missing or invalid, then the container exits at once with status 78 naming it', async () => {
    const missing = await start(productionEnv({ ENCRYPTION_KEY: '' }));
    const t0 = Date.now();
    expect(await waitExit(missing, 30_000)).toBe(78);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(await logs(missing)).toMatch(/ENCRYPTION_KEY is required in production/);

    const invalid = await start(productionEnv({ RATE_LIMIT_PER_MINUTE: 'lots' }));
    expect(await waitExit(invalid, 30_000)).toBe(78);
    expect(await logs(invalid)).toMatch(/RATE_LIMIT_PER_MINUTE must be an integer/);
  }, 60_000);

  it('When PostgreSQL answers only later, then the container waits saying so, becomes healthy once it answers, and stops on SIGTERM within 10 s', async () => {
    // A port that refuses until the "database" comes up: then it forwards to this test's PostgreSQL.
    const late = await latePostgres(scratch!.url);
    const port2 = await freePort();
    const name = await start(productionEnv({ DATABASE_URL: late.url, PORT: String(port2), HOST: '127.0.0.1', DATABASE_WAIT_SECONDS: '120' }));
    const startedAt = Date.now();
    let said = '';
    for (let i = 0; i < 40 && !said.includes('waiting for PostgreSQL'); i++) {
      await sleep(250);
      said = await logs(name);
    }
    expect(said).toMatch(/waiting for PostgreSQL/);
    expect(await fetch(`http://127.0.0.1:${port2}/readyz`).then((r) => r.status, () => 'no answer')).toBe('no answer');

    await late.open();
    const upAt = Date.now();
    try {
      let readyz: number | string = 'no answer';
      for (let i = 0; i < 600 && readyz !== 200; i++) {
        await sleep(100);
        readyz = await fetch(`http://127.0.0.1:${port2}/readyz`).then((r) => r.status, () => 'no answer');
      }
      const answeredMs = Date.now() - upAt;
      expect(readyz).toBe(200);
      let health = '';
      for (let i = 0; i < 240 && health !== 'healthy'; i++) {
        await sleep(250);
        health = (await docker(['inspect', '-f', '{{.State.Health.Status}}', name])).out.trim();
      }
      const readyMs = Date.now() - upAt;
      expect(health).toBe('healthy');
      const ready = await fetch(`http://127.0.0.1:${port2}/readyz`);
      expect(ready.status).toBe(200);
      console.log(`container-image: /readyz 200 ${(answeredMs / 1000).toFixed(1)} s after PostgreSQL answered (all migrations applied on an empty database; the container had started ${((upAt - startedAt) / 1000).toFixed(1)} s before), "healthy" for Docker's 5-second HEALTHCHECK after ${(readyMs / 1000).toFixed(1)} s`);
      const line = (await logs(name)).split('\n').find((l) => l.startsWith('{'));
      expect(() => JSON.parse(line!)).not.toThrow(); // logs are JSON lines

      const stopAt = Date.now();
      const stopped = await docker(['stop', '-t', '10', name], 30_000);
      const stopMs = Date.now() - stopAt;
      expect(stopped.code).toBe(0);
      expect(stopMs).toBeLessThan(10_000);
      expect((await docker(['inspect', '-f', '{{.State.ExitCode}}', name])).out.trim()).toBe('0');
      console.log(`container-image: stopped by SIGTERM in ${(stopMs / 1000).toFixed(1)} s, exit status 0`);
    } finally {
      late.close();
    }
  }, 120_000);
});
