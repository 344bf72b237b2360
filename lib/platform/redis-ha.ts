/**
 * What the sentinels say of the Redis topology (issue 71 item 5): which sentinels answer, the
 * master they name, and how many of its replicas are up. A master with no replica left (after a
 * failover, `connected_slaves:0`) or a sentinel down is not an outage, nothing fails, but the next
 * fault would be one: it is reported, never a reason to be unready. Each sentinel is asked over a
 * short connection of its own, bounded by `timeoutMs`.
 */

import { redisPackage } from './redis-client.js';

export interface RedisHaReport {
  sentinels: number;
  sentinels_up: number;
  /** `host:port` of each sentinel that did not answer. */
  sentinels_down: string[];
  /** `ip:port` of the master the first answering sentinel names; null when none answered. */
  master: string | null;
  /** Replicas of that master the sentinel sees up; null when no sentinel answered. */
  replicas: number | null;
}

/** A reply of fields as an object: a map (what node-redis 6 gives here) or a flat [key, value, …] array. */
function pairs(reply: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = String(reply[i + 1]);
  } else if (reply instanceof Map) {
    for (const [k, v] of reply) out[String(k)] = String(v);
  } else if (reply && typeof reply === 'object') {
    for (const [k, v] of Object.entries(reply)) out[k] = String(v);
  }
  return out;
}

const DOWN = /(^|,)(s_down|o_down|disconnected)(,|$)/;

async function askSentinel(host: string, port: number, master: string, timeoutMs: number, password?: string): Promise<{ master: string; replicas: number }> {
  const client = redisPackage().createClient({ socket: { host, port, connectTimeout: timeoutMs, reconnectStrategy: false }, password, disableOfflineQueue: true });
  client.on('error', () => undefined);
  const bounded = <T>(p: Promise<T>) => Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timed out')), timeoutMs).unref())]);
  try {
    await bounded(client.connect());
    const m = pairs(await bounded(client.sendCommand(['SENTINEL', 'MASTER', master])));
    const replicas = (await bounded(client.sendCommand(['SENTINEL', 'REPLICAS', master]))) as unknown[];
    const up = (Array.isArray(replicas) ? replicas : []).map(pairs).filter((r) => !DOWN.test(r.flags ?? '')).length;
    if (!m.ip || !m.port) throw new Error(`the sentinel does not know the master ${master}`);
    return { master: `${m.ip}:${m.port}`, replicas: up };
  } finally {
    client.destroy();
  }
}

export async function readRedisHa(target: { sentinels: Array<{ host: string; port: number }>; master: string; sentinelPassword?: string }, timeoutMs: number): Promise<RedisHaReport> {
  const answers = await Promise.allSettled(target.sentinels.map((s) => askSentinel(s.host, s.port, target.master, timeoutMs, target.sentinelPassword)));
  const first = answers.find((a): a is PromiseFulfilledResult<{ master: string; replicas: number }> => a.status === 'fulfilled');
  return {
    sentinels: target.sentinels.length,
    sentinels_up: answers.filter((a) => a.status === 'fulfilled').length,
    sentinels_down: target.sentinels.filter((_, i) => answers[i].status === 'rejected').map((s) => `${s.host}:${s.port}`),
    master: first?.value.master ?? null,
    replicas: first?.value.replicas ?? null,
  };
}
