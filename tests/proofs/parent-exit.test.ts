/**
 * A service never stops itself silently (issue 71). Started in the background by a script that
 * then exits (as `nohup … &` in a deploy script would), `node server.ts` used to stop within half a
 * second, exit 0, nothing logged above info: it stopped whenever its parent process changed, a
 * guard meant for `npm start` under a supervisor that does not pass SIGTERM on. Now only a service
 * told so (STOP_WITH_PARENT=1, which npm's start scripts set) stops with its parent, and it says so
 * at warn level.
 *
 * The service runs as a real process on the file's own database, started through a shell
 * (`sh -c '… & …'`, its own process group) that exits at once, or once the service answers.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, processAlive as alive, tempFolder } from '../support/local.js';
import { testDatabaseUrl } from '../support/db.js';
import { eventually } from '../support/eventually.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const groups: number[] = [];
const folders: string[] = [];

afterAll(async () => {
  // Only what this file started: each starter's process group (the service is in it).
  for (const g of groups) {
    try {
      process.kill(-g, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  for (const f of folders) await rm(f, { recursive: true, force: true }).catch(() => undefined);
});

const healthz = (base: string) => fetch(`${base}/healthz`).then((r) => r.status, () => 0);
/** The parent pid of `pid` (field 4 of /proc/<pid>/stat, after the command's parenthesis). */
const parentOf = async (pid: number) => Number((await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ')[1]);

/**
 * Starts `node server.ts` in the background of a shell that exits at once (`exits: 'at once'`) or
 * when its standard input closes (`'when told'`). Answers the service's pid, URL, log and the starter.
 */
async function startThroughShell(opts: { exits: 'at once' | 'when told'; stopWithParent?: boolean }) {
  const dir = await tempFolder('svc-parent-');
  folders.push(dir);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'development',
    DATABASE_URL: testDatabaseUrl(),
    DATA_DIR: path.join(dir, 'data'),
    PORT: String(port),
    HOST: '127.0.0.1',
    SIMULATOR_PORT: '0',
    GRAPH_BASE_URL: '',
    SIMULATOR_URL: '',
    ADMIN_TOKEN: 'adm_parent_exit_test_0123456789abcdef',
    ENCRYPTION_KEY: '22'.repeat(32),
    SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'warn',
    NODE_BIN: process.execPath,
    SERVICE_LOG: path.join(dir, 'service.log'),
    SERVICE_PID: path.join(dir, 'service.pid'),
  };
  for (const k of ['NODE_OPTIONS', 'REDIS_URL', 'STOP_WITH_PARENT']) delete env[k];
  if (opts.stopWithParent) env.STOP_WITH_PARENT = '1';
  // A background job of a non-interactive shell reads /dev/null, not the shell's standard input.
  const script = `"$NODE_BIN" --no-node-snapshot --import tsx server.ts > "$SERVICE_LOG" 2>&1 &
echo $! > "$SERVICE_PID"
${opts.exits === 'at once' ? 'exit 0' : 'read _line; exit 0'}`;
  const starter = spawn('sh', ['-c', script], { cwd: ROOT, env, detached: true, stdio: [opts.exits === 'at once' ? 'ignore' : 'pipe', 'ignore', 'ignore'] });
  groups.push(starter.pid!);
  const starterExit = new Promise<number | null>((resolve) => starter.once('exit', (code) => resolve(code)));
  const pidText = await eventually(() => readFile(env.SERVICE_PID!, 'utf8'), (t) => typeof t === 'string' && /^\d+\s*$/.test(t), 10_000, 'the starter wrote the pid');
  const base = `http://127.0.0.1:${port}`;
  const log = () => readFile(env.SERVICE_LOG!, 'utf8').catch(() => '');
  return {
    pid: Number(pidText),
    starter: starter.pid!,
    base,
    log,
    starterExit,
    /** Ends the starter as a script that is done ends: its standard input closes, it exits 0. */
    tellStarterToExit: () => starter.stdin!.end(),
    answers: () => eventually(() => healthz(base), (s) => s === 200, 90_000, 'the service answers /healthz').catch(async (e) => {
      throw new Error(`${(e as Error).message}\n${(await log()).slice(-3000)}`);
    }),
  };
}

/**
 * The old guard polled every 500 ms and stopped at the first change of parent: 2 s after the
 * reparenting is four of its polls. (A wait for something that must not happen has no event to
 * wait for.)
 */
const WATCH_WINDOW_MS = 2000;

describe('a service whose starter exits', () => {
  it('When a shell starts the service in the background and exits at once, then the service starts and keeps serving', async () => {
    const s = await startThroughShell({ exits: 'at once' });
    expect(await s.starterExit).toBe(0);
    await s.answers();
    expect(await parentOf(s.pid)).not.toBe(s.starter);
    await sleep(WATCH_WINDOW_MS);
    expect([await healthz(s.base), alive(s.pid)]).toEqual([200, true]);
    expect(await s.log()).not.toMatch(/shutting down/);
  }, 120_000);

  it('When the script that started the service exits once the service answers, then the service keeps serving', async () => {
    const s = await startThroughShell({ exits: 'when told' });
    await s.answers();
    expect(await parentOf(s.pid)).toBe(s.starter);
    s.tellStarterToExit();
    expect(await s.starterExit).toBe(0);
    // Reparented (to init or a subreaper): the change the old guard stopped on.
    await eventually(() => parentOf(s.pid), (p) => p !== s.starter, 5000, 'the service is reparented');
    await sleep(WATCH_WINDOW_MS);
    expect([await healthz(s.base), alive(s.pid)]).toEqual([200, true]);
    expect(await s.log()).not.toMatch(/shutting down/);
  }, 120_000);

  it('When STOP_WITH_PARENT=1 (as npm start sets it) and the parent exits, then the service logs a warning naming why and stops', async () => {
    const s = await startThroughShell({ exits: 'when told', stopWithParent: true });
    await s.answers();
    s.tellStarterToExit();
    expect(await s.starterExit).toBe(0);
    await eventually(async () => alive(s.pid), (a) => a === false, 20_000, 'the service stopped');
    expect(await healthz(s.base)).toBe(0);
    const log = await s.log();
    // LOG_LEVEL=warn: the line is there at warn level, naming the parent and the setting.
    expect(log).toMatch(new RegExp(`warn.*the parent process \\(pid ${s.starter}\\) exited: stopping with it \\(STOP_WITH_PARENT=1`, 'i'));
  }, 120_000);
});
