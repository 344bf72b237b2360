/**
 * Connections for tenant work (the tables API, the bot's tables helpers, operator DDL): logins of
 * each project's own role, in pools apart from the platform's.
 *
 * Policy and why:
 * - Confinement by construction: a tenant connection logs in AS the project's role, which is a
 *   member of no other role. Whatever SQL runs on it (generated, operator DDL, a default or check
 *   expression, `set_config('role', …)`, `RESET ROLE`) can never be more than that role: there is
 *   no session user with wider rights to fall back to. (A `SET LOCAL ROLE` on the service's own
 *   session could be undone by any expression.)
 * - The role's password is derived (HMAC) from the master key (or, outside the service, the
 *   service's database password) and the role name, so every instance agrees on it and nothing
 *   is stored; provisioning sets it.
 * - Tenant work never touches the platform pool, so authentication, sends and the channel webhook
 *   never wait for a tenant's slow query.
 * - Fair shares of the tenant slots (`FairShares`): all projects together hold at most `total`
 *   tenant transactions at once in this process, so no set of projects may leave another one
 *   waiting behind them. Before, three projects holding `perProject` (4) each filled the 10 slots
 *   and a fourth project's reads waited 5 s for 503. Now:
 *   - a project's share shrinks as others come: it holds at most
 *     `min(perProject, max(1, floor(total / active)))`, `active` being the projects holding or
 *     waiting for a slot (a project over its share keeps what it holds and takes no more);
 *   - a free slot goes to the waiting project that holds the fewest (first come among equals), so a
 *     project that holds nothing goes before every project that holds some;
 *   - the last `reserve` free slots (`reserveOf(total)`: a fifth of `total`, at least 1; 2 of 10)
 *     are only for a project that holds none, and only for the tables API and the bot's helpers
 *     (statements bounded by TABLES_STATEMENT_TIMEOUT_MS), not for operator DDL (30 s).
 *   So a project that holds nothing gets a slot at once unless every slot is taken, and then at
 *   least `reserve` of them run API or bot work of projects holding one slot each: it takes the
 *   first freed, within about one statement timeout. The cost: projects that already hold a slot
 *   use at most `total - reserve` together (8 of 10; with the defaults a lone project's own
 *   `perProject` of 4 binds first).
 *   A caller waits at most `acquireTimeoutMs` for a slot, then gets 503 `service_unavailable`.
 * - Every connection handed back is reset (`DISCARD ALL`: temp tables, session settings, prepared
 *   statements, advisory locks); one that cannot be reset is closed instead of reused.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import pg from 'pg';
import { ApiError } from '../platform/errors.js';
import { FairShares } from '../platform/fair-shares.js';
import type { CommitGuard } from '../platform/db/commit-guard.js';

export interface TenantPoolOptions {
  /** Tenant transactions of one project at once (this process). */
  perProject: number;
  /** Tenant connections of all projects at once (this process). */
  total: number;
  /** Longest wait for a slot; past it, 503. */
  acquireTimeoutMs: number;
  /** Idle tenant connections are closed after this long. */
  idleMs: number;
  /** Key of the derived login passwords (the master key's derivation); default: the platform password. */
  secret?: Buffer;
  /** The bound on commits waiting for a synchronous standby (lib/platform/db/commit-guard.ts), applied to tenant commits too. */
  commits?: Pick<CommitGuard, 'watch'>;
}

export const DEFAULT_TENANT_POOL: TenantPoolOptions = { perProject: 4, total: 10, acquireTimeoutMs: 5000, idleMs: 10_000 };

export interface TenantConnection {
  client: pg.PoolClient;
  /** Resets the session and returns it (or closes it when `broken` or the reset fails). */
  release(broken?: boolean): Promise<void>;
}

function busy(what: string, ms: number): ApiError {
  return new ApiError('service_unavailable', `Too many table operations are running ${what}; none became free within ${ms} ms. Retry later.`, { timeout_ms: ms }, { 'Retry-After': '1' });
}

export class TenantPools {
  private readonly pools = new Map<string, pg.Pool>();
  private readonly shares: FairShares;
  private closed = false;

  constructor(private readonly platformUrl: string, readonly options: TenantPoolOptions) {
    this.shares = new FairShares(options.total, options.perProject);
  }

  /** The password of a project role's login (derived, never stored). */
  passwordOf(role: string): string {
    if (this.options.secret) return createHmac('sha256', this.options.secret).update(role).digest('base64url');
    let key = this.platformUrl;
    try {
      const u = new URL(this.platformUrl);
      if (u.password) key = decodeURIComponent(u.password);
    } catch { /* the whole URL is the key */ }
    return createHmac('sha256', `tenant-login\n${key}`).update(role).digest('base64url');
  }

  private poolOf(role: string): pg.Pool {
    let pool = this.pools.get(role);
    if (!pool) {
      const u = new URL(this.platformUrl);
      u.username = role;
      u.password = this.passwordOf(role);
      pool = new pg.Pool({
        connectionString: u.toString(),
        max: this.options.perProject,
        idleTimeoutMillis: this.options.idleMs,
        connectionTimeoutMillis: this.options.acquireTimeoutMs,
        application_name: 'tenant',
        // Idle tenant connections never keep the process alive.
        allowExitOnIdle: true,
      });
      // An idle connection dropped by the server must not end the process; the pool reconnects.
      pool.on('error', () => undefined);
      pool.on('connect', (c) => c.on('error', () => undefined));
      // A tenant commit that waits for a synchronous standby answers 503 as a platform one does (issue 71).
      this.options.commits?.watch(pool);
      this.pools.set(role, pool);
    }
    return pool;
  }

  /**
   * A connection logged in as `role`, within the project's share of the process's slots.
   * `reserve`: the work may take a reserved slot (the tables API and the bot, not operator DDL).
   */
  async connect(projectId: string, role: string, opts: { reserve: boolean } = { reserve: false }): Promise<TenantConnection> {
    if (this.closed) throw new ApiError('service_unavailable', 'The service is shutting down.');
    const timeout = this.options.acquireTimeoutMs;
    if (!(await this.shares.acquire(projectId, timeout, opts))) {
      throw busy(this.shares.heldBy(projectId) >= this.shares.share() ? 'for this project' : 'on this instance', timeout);
    }
    const release = () => this.shares.release(projectId);
    let client: pg.PoolClient;
    try {
      client = await this.poolOf(role).connect();
    } catch (e) {
      release();
      if ((e as Error).message?.includes('timeout')) throw busy('on this instance', timeout);
      throw e;
    }
    let done = false;
    return {
      client,
      release: async (broken = false) => {
        if (done) return;
        done = true;
        let destroy = broken;
        if (!destroy) {
          try {
            await client.query('DISCARD ALL');
          } catch {
            destroy = true;
          }
        }
        // Idle connections of all projects together stay within `total` too.
        if (!destroy && this.physical() > this.options.total) destroy = true;
        client.release(destroy);
        release();
      },
    };
  }

  /** Open tenant connections (in use and idle), all projects together. */
  private physical(): number {
    let n = 0;
    for (const p of this.pools.values()) n += p.totalCount;
    return n;
  }

  /** Closes the connections of a role about to be dropped. */
  async forget(role: string): Promise<void> {
    const pool = this.pools.get(role);
    this.pools.delete(role);
    await pool?.end().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  }
}

/**
 * The SCRAM-SHA-256 verifier of a password (RFC 7677, PostgreSQL's stored form): ALTER ROLE is
 * given this, never the password, so no server log (log_statement) ever holds the password.
 */
export function scramVerifier(password: string, salt = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

const registry = new WeakMap<pg.Pool, TenantPools>();

/** Ties the tenant pools to the platform pool they belong to (services.ts). */
export function configureTenantPools(platform: pg.Pool, url: string, options: Partial<TenantPoolOptions> = {}): TenantPools {
  const pools = new TenantPools(url, { ...DEFAULT_TENANT_POOL, ...options });
  registry.set(platform, pools);
  return pools;
}

/** The tenant pools of a platform pool; defaults when none were configured (scripts, tests). */
export function tenantPoolsOf(platform: pg.Pool): TenantPools {
  let pools = registry.get(platform);
  if (!pools) {
    const url = (platform as unknown as { options: { connectionString?: string } }).options.connectionString;
    if (!url) throw new Error('Tenant pools need the platform pool to be opened from a connection string.');
    pools = configureTenantPools(platform, url);
  }
  return pools;
}

/** Closes the tenant pools of a platform pool, if any (before the platform pool ends). */
export async function closeTenantPools(platform: pg.Pool): Promise<void> {
  const pools = registry.get(platform);
  registry.delete(platform);
  await pools?.close();
}
