/**
 * What a newcomer meets in the first hour when a port is taken (moved from first-hour.test.ts: it
 * starts the service, so it runs with the process proofs): each busy port (HTTP, simulator,
 * embedded PostgreSQL) stops start-up with one line naming its setting.
 *
 * @shared It starts the service on ports of its own and reads its refusal: it kills nothing and measures no time.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, runProcess, tempFolder, type ProcessRun } from '../support/local.js';
import { testDatabaseUrl } from '../support/db.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** server.ts as `npm start` runs it, on the test database, until it exits. */
function startServer(env: NodeJS.ProcessEnv): Promise<ProcessRun> {
  return runProcess(process.execPath, ['--no-node-snapshot', '--import', 'tsx', 'server.ts'], { cwd: ROOT, env, timeoutMs: 60_000 });
}

describe('busy ports', () => {
  let holder: net.Server;
  let busy: number;
  beforeAll(async () => {
    holder = net.createServer();
    busy = await freePort();
    await new Promise<void>((r) => holder.listen(busy, '127.0.0.1', () => r()));
  });
  afterAll(async () => {
    await new Promise((r) => holder.close(r));
  });

  const envWith = async (extra: NodeJS.ProcessEnv) => {
    const env: NodeJS.ProcessEnv = {
      ...process.env, NODE_ENV: 'development', DATA_DIR: path.join(await tempFolder('ports-'), 'data'), DATABASE_URL: testDatabaseUrl(), HOST: '127.0.0.1',
      ADMIN_TOKEN: 'adm_ports_test_token_0123456789', LOG_LEVEL: 'error', PORT: String(await freePort()), SIMULATOR_PORT: String(await freePort()), ...extra,
    };
    for (const k of ['GRAPH_BASE_URL', 'SIMULATOR_URL', 'REDIS_URL', 'NODE_OPTIONS']) if (!(k in extra)) delete env[k];
    return env;
  };

  it.each([
    ['the HTTP port', 'PORT', 'Service API'],
    ['the simulator port', 'SIMULATOR_PORT', 'Cloud API simulator'],
  ])('When %s is busy, then start-up fails with one line naming %s', async (_what, setting, part) => {
    const run = await startServer(await envWith({ [setting]: String(busy) }));
    expect(run.code).toBe(1);
    const failed = run.stderr.split('\n').filter((l) => l.startsWith('Failed to start'));
    expect(failed).toEqual([`Failed to start: ${part}: port ${busy} on 127.0.0.1 is already in use by another program. Stop that program or choose another port with ${setting}.`]);
    expect(run.stderr).not.toMatch(/Cannot read properties|EADDRINUSE/);
  }, 90_000);

  it('When the embedded PostgreSQL port is busy, then start-up fails with one line naming EMBEDDED_PG_PORT', async () => {
    const env = await envWith({ EMBEDDED_PG_PORT: String(busy) });
    delete env.DATABASE_URL;
    const run = await startServer(env);
    expect(run.code).toBe(1);
    const failed = run.stderr.split('\n').filter((l) => l.startsWith('Failed to start'));
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatch(new RegExp(`^Failed to start: Embedded PostgreSQL: port ${busy} on 127\\.0\\.0\\.1 is already in use by another program\\. .*EMBEDDED_PG_PORT`));
  }, 120_000);
});
