/**
 * At start, PostgreSQL may not answer yet (a compose file starting everything at once, a managed
 * database restarting, a loaded host where a connection takes seconds). Policy: until the start-up
 * deadline (`DATABASE_WAIT_SECONDS` after the wait began), every step of the start that connects —
 * the first reachability check, the migrations, the pools' first connection, the re-seal of stored
 * secrets, the job runner's start (its own connections) — is tried again after a
 * second when it fails to *connect* (refused, reset, timed out, "the database system is starting
 * up", too many clients), saying once and then every 10 s what is awaited and why. A connect
 * timeout is such a failure: a server that accepts and never answers is one that is not up yet.
 * Anything else (a wrong password, a failing migration) fails the start at once. The HTTP server is
 * not listening meanwhile, so a load balancer's readiness probe gets nothing and sends no traffic.
 * Past the deadline the start fails with the last reason (0 = a single try).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { checkReachable } from './database.js';

interface StartLogger { warn(m: string): void; info(m: string): void }

/** Errors of connecting (or of a server not ready for connections), as opposed to errors of use. */
const CONNECT_FAILURE = /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|EPIPE|connection timeout|timeout expired|timeout exceeded when trying to connect|Connection terminated|the database system is (starting up|shutting down|not yet accepting connections|in recovery mode)|too many clients|remaining connection slots are reserved|cannot reach PostgreSQL/i;
const CONNECT_CODES = new Set(['57P03', '53300', '08000', '08001', '08003', '08006', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EPIPE']);

export function isConnectFailure(e: unknown): boolean {
  const err = e as { code?: unknown; message?: unknown; errors?: { message?: unknown }[]; cause?: unknown } | undefined;
  if (!err) return false;
  if (typeof err.code === 'string' && CONNECT_CODES.has(err.code)) return true;
  if (typeof err.message === 'string' && CONNECT_FAILURE.test(err.message)) return true;
  if (Array.isArray(err.errors) && err.errors.some((x) => typeof x?.message === 'string' && CONNECT_FAILURE.test(x.message))) return true;
  return err.cause !== undefined && err.cause !== e && isConnectFailure(err.cause);
}

export interface StartDeadline {
  /** Epoch ms after which a failure to connect ends the start. */
  until: number;
  /** DATABASE_WAIT_SECONDS, for the messages. */
  waitSeconds: number;
  logger: StartLogger;
}

export function startDeadline(waitSeconds: number, logger: StartLogger): StartDeadline {
  return { until: Date.now() + waitSeconds * 1000, waitSeconds, logger };
}

/**
 * Runs `attempt` (one step of the start, `what`: "apply the migrations"), again after a second while it fails to connect and
 * the deadline has not passed.
 */
export async function whileStarting<T>(what: string | undefined, attempt: () => Promise<T>, deadline: StartDeadline | undefined, retryAny = false): Promise<T> {
  let lastSaid = 0;
  let waited = false;
  for (;;) {
    try {
      const result = await attempt();
      if (waited) deadline?.logger.info(what ? `PostgreSQL answers: ${what} done` : 'PostgreSQL answers: starting');
      return result;
    } catch (e) {
      if (!deadline || Date.now() >= deadline.until || !(retryAny || isConnectFailure(e))) throw e;
      if (Date.now() - lastSaid >= 10_000) {
        deadline.logger.warn(`waiting for PostgreSQL${what ? ` to ${what}` : ''} (up to DATABASE_WAIT_SECONDS=${deadline.waitSeconds}): ${(e as Error).message}`);
        lastSaid = Date.now();
      }
      waited = true;
      await sleep(Math.min(1000, Math.max(0, deadline.until - Date.now())));
    }
  }
}

/**
 * The first step: PostgreSQL answers a connection at all. Every failure is awaited here (also a
 * wrong password: a managed database may refuse logins while it restarts); each try may take
 * `connectTimeoutMs` (5 s: a loaded host's PostgreSQL can take seconds to accept).
 */
export async function waitForDatabase(url: string, opts: { waitSeconds: number; logger: StartLogger; deadline?: StartDeadline; connectTimeoutMs?: number }): Promise<void> {
  const deadline = opts.deadline ?? startDeadline(opts.waitSeconds, opts.logger);
  const perTry = opts.connectTimeoutMs ?? 5000;
  const timeout = () => {
    const left = deadline.until - Date.now();
    return left > 0 ? Math.max(500, Math.min(perTry, left)) : perTry;
  };
  await whileStarting(undefined, () => checkReachable(url, timeout()), deadline, true);
}
