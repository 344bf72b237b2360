/** Prisma 7 error shapes (see ../shared/STACK.md): a unique violation is P2002. */
export function isUniqueViolation(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: string }).code === 'P2002';
}

const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '55P03']);
const UNAVAILABLE_PRISMA = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
const UNAVAILABLE_TEXT = /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|Connection terminated|timeout exceeded when trying to connect|terminating connection|the database system is (starting up|shutting down)|Client has encountered a connection error|statement timeout|lock timeout|Can't reach database server|connection.*closed/i;

/**
 * Whether an error means the database is (for now) out of reach or too slow: a restart, a
 * terminated backend, a refused connection, no free pool connection in time, a statement or lock
 * timeout. Such a request answers 503 with Retry-After instead of a bare 500, and the service
 * recovers by itself once PostgreSQL answers again. Errors come raw from pg or wrapped by Prisma's
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
