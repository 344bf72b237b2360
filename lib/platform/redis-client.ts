/**
 * The one place the service chooses and builds its Redis client (node-redis v6): a plain client at
 * `REDIS_URL`, or, for high availability (docs/deploy.md "High availability"), a Sentinel client
 * (`REDIS_SENTINELS` + `REDIS_SENTINEL_MASTER`) that asks the sentinels for the current master and
 * follows it when they promote a replica. Both are fail-fast (../../shared/STACK.md, "Redis 6"):
 * commands are refused at once while disconnected, bounded in time, and the client reconnects by
 * itself. Callers see one small interface whichever it is.
 */
import { createRequire } from 'node:module';
import type * as Redis from 'redis';

let loaded: typeof Redis | undefined;
/**
 * The redis package, loaded on first use: it is some 650 modules, and a service without Redis
 * (the single-instance default) never needs them.
 */
export function redisPackage(): typeof Redis {
  return (loaded ??= createRequire(import.meta.url)('redis') as typeof Redis);
}

/** Where Redis is: one server, or a master found through its sentinels. */
export type RedisTarget =
  | { kind: 'url'; url: string }
  | {
      kind: 'sentinel';
      /** At least one sentinel's address; three are usual. */
      sentinels: Array<{ host: string; port: number }>;
      /** The master's name in the sentinels' `sentinel monitor` line. */
      master: string;
      /** The master's and replicas' password (`requirepass`), if any. */
      password?: string;
      /** The sentinels' own password, if any. */
      sentinelPassword?: string;
    };

/** What the service uses of a Redis client. */
export interface RedisConnection {
  readonly isReady: boolean;
  sendCommand(args: string[]): Promise<unknown>;
  onError(listener: (err: unknown) => void): void;
  onReady(listener: () => void): void;
  connect(): Promise<unknown>;
  close(): Promise<void>;
  destroy(): void;
}

export interface RedisConnectionOptions {
  /** Bound on a command still waiting to be written. */
  timeoutMs: number;
  /** Cap of the reconnect backoff. */
  maxReconnectDelayMs: number;
  /** Cap of the command queue: while Redis is hung, new commands fail at once. */
  maxQueuedCommands: number;
}

/** The target the settings name (REDIS_URL, or REDIS_SENTINELS with REDIS_SENTINEL_MASTER), or none. */
export function redisTargetOf(config: {
  redisUrl?: string;
  redisSentinels?: Array<{ host: string; port: number }>;
  redisSentinelMaster?: string;
  redisPassword?: string;
  redisSentinelPassword?: string;
}): RedisTarget | undefined {
  if (config.redisSentinels?.length && config.redisSentinelMaster) {
    return { kind: 'sentinel', sentinels: config.redisSentinels, master: config.redisSentinelMaster, password: config.redisPassword, sentinelPassword: config.redisSentinelPassword };
  }
  return config.redisUrl ? { kind: 'url', url: config.redisUrl } : undefined;
}

/** Capped exponential backoff with a little jitter; never gives up. */
function backoff(maxDelayMs: number) {
  return (retries: number) => Math.min(50 * 2 ** Math.min(retries, 10), maxDelayMs) + Math.floor(Math.random() * 50);
}

export function createRedisConnection(target: RedisTarget, opts: RedisConnectionOptions): RedisConnection {
  const socket = { connectTimeout: Math.max(opts.timeoutMs, 1_000), reconnectStrategy: backoff(opts.maxReconnectDelayMs) };
  const { createClient, createSentinel } = redisPackage();
  if (target.kind === 'url') {
    const client = createClient({
      url: target.url,
      // Reject commands at once while disconnected instead of queueing them until Redis returns.
      disableOfflineQueue: true,
      // Bounds a command still waiting to be written; once written node-redis drops this timer,
      // so callers race their own timer too.
      commandOptions: { timeout: opts.timeoutMs },
      commandsQueueMaxLength: opts.maxQueuedCommands,
      socket,
    });
    return {
      get isReady() {
        return client.isReady;
      },
      sendCommand: (args) => client.sendCommand(args),
      onError: (l) => void client.on('error', l),
      onReady: (l) => void client.on('ready', l),
      connect: () => client.connect(),
      close: () => client.close(),
      destroy: () => client.destroy(),
    };
  }
  const sentinel = createSentinel({
    name: target.master,
    sentinelRootNodes: target.sentinels,
    nodeClientOptions: { password: target.password, disableOfflineQueue: true, commandsQueueMaxLength: opts.maxQueuedCommands, socket },
    sentinelClientOptions: { password: target.sentinelPassword, socket },
    commandOptions: { timeout: opts.timeoutMs },
    masterPoolSize: 1,
    // The sentinels also announce a new master at once (+switch-master); this is the fallback.
    scanInterval: 2_000,
    // The master's and sentinels' clients report their errors here.
    passthroughClientErrorEvents: true,
  });
  return {
    get isReady() {
      return sentinel.isReady;
    },
    // Writes only (every counter command changes a key): always on the master.
    sendCommand: (args) => sentinel.sendCommand(false, args),
    onError: (l) => void sentinel.on('error', l),
    onReady: (l) => void sentinel.on('ready', l),
    connect: () => sentinel.connect(),
    close: () => sentinel.close(),
    destroy: () => void sentinel.destroy().catch(() => {}),
  };
}
