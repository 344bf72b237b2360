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
 *
 * Two more memories, under the same rules (cleared by every notification, bypassed while not listening),
 * let the failed-authentication throttle (middleware/auth-throttle.ts) refuse a flood without a query
 * each and without refusing a valid credential:
 * - known-bad digests: ones the database answered as unknown, revoked, rotated or expired, with their
 *   401 code. Only negatives are held, and a negative stays true: secrets are random, so no key or token
 *   can later be created with a digest held here, and revocation and expiry are final; a notification
 *   clears them anyway. Bounded (the oldest go first).
 * - the valid digests: the set of every usable key's and token's digest, loaded with one query when first
 *   needed after a notification (lazily: only a throttled address asks). It lets a throttled address's
 *   valid credential through to its lookup, including a key created or first used on another instance.
 */
import type pg from 'pg';
import type { Credential } from './types.js';
import type { Logger } from '../platform/logger.js';
import { listen, notify, type Listener } from '../platform/db/notifications.js';

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
    else await notify(deps.db.pool, CHANNEL);
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

const VALID_DIGESTS_SQL = `
  SELECT secret_hash FROM api_keys WHERE revoked_at IS NULL
  UNION ALL
  SELECT secret_hash FROM access_tokens WHERE revoked_at IS NULL AND expires_at > $1`;

export class CredentialCache {
  private readonly entries = new Map<string, Entry>();
  /** digest → the 401 code the database answered (invalid_api_key, invalid_token). */
  private readonly bad = new Map<string, string>();
  /** Dropped by every clear, so a load that raced a notification serves only the callers already waiting. */
  private valid?: Promise<Set<string>>;
  /** Lookups in flight by key (shared); dropped by every clear, like `valid`. */
  private readonly inFlight = new Map<string, Promise<unknown>>();
  private listening = false;
  private listener?: Listener;

  constructor(
    private readonly pool: pg.Pool,
    private readonly opts: { ttlMs: number; maxEntries?: number; logger?: Logger; enabled?: boolean },
  ) {}

  /**
   * Starts listening for invalidations (lib/platform/db/notifications.ts): until it is in place, and
   * whenever the connection is lost, the cache is bypassed; on every (re)connect it starts empty.
   */
  async start(): Promise<void> {
    if (this.opts.enabled === false) return;
    this.listener = await listen(this.pool, {
      [CHANNEL]: (payload) => {
        this.clearAll();
        if (payload === undefined) this.listening = true;
      },
    }, this.opts.logger, {
      name: 'credential cache',
      retryMs: 1000,
      maxRetryMs: 1000,
      onLost: () => {
        this.listening = false;
        this.clearAll();
      },
    });
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

  /**
   * Runs `load` for `key`, or joins the one already running for it: concurrent misses of one entry
   * make one lookup. A clear drops the loads in flight, so a caller after an invalidation never
   * gets an answer read before it. Bypassed while not listening.
   */
  shared<T>(key: string, load: () => Promise<T>): Promise<T> {
    if (!this.listening) return load();
    const running = this.inFlight.get(key) as Promise<T> | undefined;
    if (running) return running;
    const started = load();
    this.inFlight.set(key, started);
    const done = () => {
      if (this.inFlight.get(key) === started) this.inFlight.delete(key);
    };
    started.then(done, done);
    return started;
  }

  private clearAll(): void {
    this.inFlight.clear();
    this.entries.clear();
    this.bad.clear();
    this.valid = undefined;
  }

  /** The 401 code of a digest the database refused, if this instance still knows it. */
  knownBad(digest: string): string | undefined {
    return this.listening ? this.bad.get(digest) : undefined;
  }

  markBad(digest: string, code: string): void {
    if (!this.listening) return;
    if (this.bad.size >= (this.opts.maxEntries ?? 10_000)) this.bad.delete(this.bad.keys().next().value as string);
    this.bad.set(digest, code);
  }

  /**
   * Whether a digest belongs to a usable key or token, from the valid-digest set (one query after each
   * notification, shared by concurrent callers; a token in it may have expired since: its lookup says so); undefined when this instance cannot know (not listening,
   * or the load failed).
   */
  async isValidDigest(digest: string, now: Date): Promise<boolean | undefined> {
    if (!this.listening) return undefined;
    if (!this.valid) {
      const load = this.pool.query<{ secret_hash: string }>({ name: 'credential-valid-digests', text: VALID_DIGESTS_SQL, values: [now] }).then((r) => new Set(r.rows.map((x) => x.secret_hash)));
      this.valid = load;
      load.catch(() => {
        if (this.valid === load) this.valid = undefined; // the next caller tries again
      });
    }
    try {
      return (await this.valid).has(digest);
    } catch (e) {
      this.opts.logger?.warn('credential cache: cannot load the valid digests', { error: String(e) });
      return undefined;
    }
  }

  /** After a change to credentials: clear here now, and everywhere else through PostgreSQL. */
  async invalidate(): Promise<void> {
    this.clearAll();
    await notify(this.pool, CHANNEL);
  }

  async stop(): Promise<void> {
    this.listening = false;
    this.clearAll();
    await this.listener?.close();
    this.listener = undefined;
  }
}
