/** What the drills on scripts/ha/cluster.sh (Patroni, etcd, Sentinel, HAProxy) need from the machine. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

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
