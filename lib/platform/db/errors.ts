/**
 * A unique violation from either client a store's handle may run on (tx.ts): Prisma 7's P2002 (see
 * ../shared/STACK.md) or pg's SQLSTATE 23505.
 */
export function isUniqueViolation(e: unknown): boolean {
  const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
  return code === 'P2002' || code === '23505';
}

/**
 * SQLSTATEs that mean "not now" rather than "not this request": class 08 (connection exceptions,
 * below), 57P01 admin shutdown (a terminated backend, a fast shutdown), 57P02 crash shutdown, 57P03
 * cannot_connect_now (starting up, shutting down, in recovery), 57P05 idle session timeout, 53300
 * too many connections, 53100 disk full, 57014 statement timeout, 55P03 lock timeout, and 25006
 * read_only_sql_transaction: PostgreSQL restarted read-only or demoted to a standby (Patroni does
 * both; "cannot execute INSERT in a read-only transaction"). The service's own READ ONLY
 * transactions (table reads, dry runs) only read, and a project's DDL that meets 25006 is mapped
 * before it gets here (lib/tables/ddl.ts), so a 25006 reaching the error handler is the server's
 * state, not the request's. On a standby a transaction the service begins READ WRITE fails before
 * any write, with 0A000 (feature_not_supported, a class of its own unrelated errors share): that one
 * is recognised by its message, "cannot set transaction read-write mode during recovery", below.
 * Serialization failures and deadlocks (40001, 40P01) are not here: they are retried where they
 * can happen (inTransaction's `retryOn`), and one that escapes is a fault.
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57P05', '53300', '53100', '57014', '55P03', '25006']);
/**
 * Prisma's codes for the same: can't reach (P1001), timed out (P1002, P1008), connection closed
 * (P1017), no pool connection in time (P2024), too many connections (P2037). A SQLSTATE Prisma has no
 * code of its own for (25006 among them) arrives as P2010 or as the driver adapter's error, with the
 * SQLSTATE in `meta.driverAdapterError.cause.originalCode`: walked below.
 */
const UNAVAILABLE_PRISMA = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2037']);
const UNAVAILABLE_TEXT = /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|Connection terminated|timeout exceeded when trying to connect|terminating connection|the database system is (starting up|shutting down|in recovery mode|not yet accepting connections)|Client has encountered a connection error|statement timeout|lock timeout|Can't reach database server|connection.*closed|cannot execute \w+( \w+)? in a read-only transaction|cannot set transaction read-write mode during recovery/i;

/**
 * Whether an error means the database is (for now) out of reach, too slow or unable to write: a
 * restart, a terminated backend, a refused connection, no free pool connection in time, a statement
 * or lock timeout, a primary restarted read-only or demoted. Such a request answers 503 with
 * Retry-After instead of a bare 500, and the service recovers by itself once PostgreSQL answers
 * (and takes writes) again. Errors come raw from pg or wrapped by Prisma's
 * driver adapter, so the cause chain is walked.
 */
export function isDatabaseUnavailable(e: unknown, depth = 0): boolean {
  if (typeof e !== 'object' || e === null || depth > 5) return false;
  const err = e as { code?: unknown; message?: unknown; cause?: unknown; meta?: { driverAdapterError?: unknown }; errors?: unknown[] };
  const code = typeof err.code === 'string' ? err.code : '';
  if (UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_PRISMA.has(code) || code.startsWith('08')) return true;
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'].includes(code)) return true;
  if (typeof err.message === 'string' && UNAVAILABLE_TEXT.test(err.message)) return true;
  const adapter = err.meta?.driverAdapterError as { cause?: { originalCode?: string; kind?: string } } | undefined;
  if (adapter?.cause?.originalCode && isDatabaseUnavailable({ code: adapter.cause.originalCode }, depth + 1)) return true;
  if (adapter?.cause?.kind && /Connection|Timeout|Closed/i.test(adapter.cause.kind)) return true;
  if (Array.isArray(err.errors) && err.errors.some((x) => isDatabaseUnavailable(x, depth + 1))) return true;
  return isDatabaseUnavailable(err.cause, depth + 1) || (adapter !== undefined && isDatabaseUnavailable(adapter, depth + 1));
}
