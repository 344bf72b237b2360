/** What the drills on scripts/ha/cluster.sh (Patroni, etcd, Sentinel, HAProxy) need from the machine. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { runProcess } from './local.js';

export const HA_SCRIPT = path.resolve('scripts/ha/cluster.sh');

/** Why the drills cannot run here (not root, or what to install), or undefined when they can. */
export function haSkipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root (PostgreSQL and Patroni run as the user postgres)';
  const missing = ['patroni', 'etcd', 'redis-sentinel', 'redis-server', 'haproxy', 'psql'].filter((b) => {
    try {
      execFileSync('sh', ['-c', `command -v ${b}`], { stdio: 'ignore' });
      return false;
    } catch {
      return true;
    }
  });
  if (!existsSync('/usr/lib/postgresql/15/bin/postgres')) missing.push('PostgreSQL 15');
  return missing.length ? `missing ${missing.join(', ')} (apt-get install patroni etcd-server redis-sentinel haproxy postgresql)` : undefined;
}

/**
 * `scripts/ha/cluster.sh up DIR`: its stdout, or an error carrying what the script said of the
 * failure (a node's log tail; the shell's "Killed" lines of the teardown left out, they would push it
 * out of the message). DIR is removed after the file, so the message is all that is left of the logs.
 */
export async function haUp(dir: string, env: NodeJS.ProcessEnv): Promise<string> {
  const up = await runProcess(HA_SCRIPT, ['up', dir], { timeoutMs: 240_000, env: { ...process.env, ...env } });
  if (up.code === 0) return up.stdout.trim();
  const said = up.stderr.split('\n').filter((l) => !/ Killed\s+setsid /.test(l)).join('\n');
  throw new Error(`scripts/ha/cluster.sh up failed (${up.code}): ${said.slice(-4000)}`);
}
