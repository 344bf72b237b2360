/**
 * A short-lived in-process cache of resolved credentials, runtime tokens and opened channel
 * settings, so the hot paths (every request, send, channel callback and custom event) do not
 * query the database and decrypt secrets each time. It is only trusted while this instance hears invalidations:
 *
 * - every domain write to credentials (keys, projects, connections and their grants, tokens,
 *   channel settings) calls `credentialsChanged` once it has committed, whoever asked for it (the
 *   operator API, the dashboard, the ops CLI through the API): it clears the local cache before
 *   the write returns and sends `NOTIFY credentials_changed`, which clears every other instance's;
 * - while the LISTEN connection is down the cache is bypassed (and cleared on reconnect);
 * - entries also expire after `ttlMs`, and access-token expiry is checked on every use.
 *
 * So a rotation, revocation or scope edit takes effect on this instance's next request, and on
 * other instances as soon as PostgreSQL delivers the notification (milliseconds).
 */
import type pg from 'pg';
import type { Credential } from './types.js';
import type { Logger } from '../platform/logger.js';

export const CHANNEL = 'credentials_changed';

/**
 * The one place credential caches are invalidated, called by the domain after a credential write
 * committed: this instance's cache (when it has one) clears now, every other instance's through
 * PostgreSQL. A failure is logged, never thrown: the write stands, and entries expire after their TTL.
 */
export async function credentialsChanged(deps: {
  db: { pool: Pick<pg.Pool, 'query'> };
  credentialCache?: CredentialCache;
  logger?: Pick<Logger, 'error'>;
}): Promise<void> {
  try {
    if (deps.credentialCache) await deps.credentialCache.invalidate();
    else await deps.db.pool.query(`SELECT pg_notify('${CHANNEL}', '')`);
  } catch (e) {
    deps.logger?.error('credential cache: invalidation failed', { error: String(e) });
  }
}

interface Entry {
  value: unknown;
  /** Access tokens: when the token expires. */
  expiresAt?: number;
  cachedAt: number;
}

export class CredentialCache {
  private readonly entries = new Map<string, Entry>();
  private listening = false;
  private client?: pg.PoolClient;
  private stopped = false;
  private retry?: NodeJS.Timeout;

  constructor(
    private readonly pool: pg.Pool,
    private readonly opts: { ttlMs: number; maxEntries?: number; logger?: Logger; enabled?: boolean },
  ) {}

  /** Starts listening for invalidations; until it succeeds the cache is bypassed. */
  async start(): Promise<void> {
    if (this.opts.enabled === false) return;
    let client: pg.PoolClient | undefined;
    try {
      client = await this.pool.connect();
      client.on('notification', (n) => {
        if (n.channel === CHANNEL) this.entries.clear();
      });
      client.on('error', () => this.lost());
      await client.query(`LISTEN ${CHANNEL}`);
      this.client = client;
      this.entries.clear();
      this.listening = true;
    } catch (e) {
      if (client && client !== this.client) client.release(true);
      this.opts.logger?.warn('credential cache: cannot listen for invalidations; bypassed until it can', { error: String(e) });
      this.scheduleRetry();
    }
  }

  private lost(): void {
    this.listening = false;
    this.entries.clear();
    const client = this.client;
    this.client = undefined;
    client?.release(true);
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.stopped || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.start();
    }, 1000);
    this.retry.unref();
  }

  /** A credential by its digest. */
  get(digest: string, now: number): Credential | undefined {
    return this.lookup(digest, now) as Credential | undefined;
  }

  set(digest: string, credential: Credential, now: number, expiresAt?: Date): void {
    this.store(digest, credential, now, expiresAt);
  }

  /**
   * Anything else operator writes govern, under a key of its kind, e.g. `channel:<project id>`
   * (opened channel settings) or `rt:<digest>` (a runtime token and its project's state).
   */
  lookup(key: string, now: number): unknown {
    if (!this.listening) return undefined;
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (now - entry.cachedAt > this.opts.ttlMs || (entry.expiresAt !== undefined && entry.expiresAt <= now)) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  store(key: string, value: unknown, now: number, expiresAt?: Date): void {
    if (!this.listening) return;
    if (this.entries.size >= (this.opts.maxEntries ?? 10_000)) this.entries.clear();
    this.entries.set(key, { value, cachedAt: now, expiresAt: expiresAt?.getTime() });
  }

  /** After a change to credentials: clear here now, and everywhere else through PostgreSQL. */
  async invalidate(): Promise<void> {
    this.entries.clear();
    await this.pool.query(`SELECT pg_notify('${CHANNEL}', '')`);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    this.listening = false;
    this.entries.clear();
    const client = this.client;
    this.client = undefined;
    if (client) {
      await client.query(`UNLISTEN ${CHANNEL}`).catch(() => undefined);
      client.release();
    }
  }
}
