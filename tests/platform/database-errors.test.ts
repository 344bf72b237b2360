/**
 * Which database errors mean "not now" (503 service_unavailable with Retry-After) and which are
 * faults of their own (500): the shapes they arrive in, raw from pg and wrapped by Prisma's driver
 * adapter. tests/proofs/read-only-database.test.ts proves the read-only case against a real PostgreSQL.
 */
import { describe, expect, it } from '@jest/globals';
import { isDatabaseUnavailable } from '../../lib/platform/db/errors.js';

/** As node-postgres raises a server error. */
const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code, severity: 'ERROR' });
/** As Prisma 7 raises a SQLSTATE it has no code of its own for: the adapter's error in `meta.driverAdapterError`. */
const prismaWrapped = (prismaCode: string, sqlstate: string, message = 'x') =>
  Object.assign(new Error(`Raw query failed. Code: \`${sqlstate}\`. Message: \`${message}\``), {
    code: prismaCode,
    meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { kind: 'postgres', code: sqlstate, originalCode: sqlstate, originalMessage: message, message } } },
  });
/** As the adapter's own error escapes Prisma unwrapped (a `kind: 'postgres'` cause). */
const adapterError = (sqlstate: string, message = 'x') =>
  Object.assign(new Error(message), { name: 'DriverAdapterError', cause: { kind: 'postgres', code: sqlstate, originalCode: sqlstate, originalMessage: message, message } });

describe('isDatabaseUnavailable', () => {
  const readOnly = 'cannot execute INSERT in a read-only transaction';

  it('When PostgreSQL refuses a write because it is read-only or a standby (25006), then it is unavailability, raw or wrapped by Prisma', () => {
    expect(isDatabaseUnavailable(pgError('25006', readOnly))).toBe(true);
    expect(isDatabaseUnavailable(prismaWrapped('P2010', '25006', readOnly))).toBe(true);
    expect(isDatabaseUnavailable(adapterError('25006', readOnly))).toBe(true);
    // Wrapped once more (a store that rethrows with a cause).
    expect(isDatabaseUnavailable(new Error('record failed', { cause: pgError('25006', readOnly) }))).toBe(true);
  });

  it('When a transaction begun READ WRITE meets a standby (0A000, "cannot set transaction read-write mode during recovery"), then it is unavailability; another 0A000 is not', () => {
    const recovery = 'cannot set transaction read-write mode during recovery';
    expect(isDatabaseUnavailable(pgError('0A000', recovery))).toBe(true);
    expect(isDatabaseUnavailable(prismaWrapped('P2010', '0A000', recovery))).toBe(true);
    expect(isDatabaseUnavailable(adapterError('0A000', recovery))).toBe(true);
    expect(isDatabaseUnavailable(pgError('0A000', 'cannot use column reference in DEFAULT expression'))).toBe(false);
    expect(isDatabaseUnavailable(prismaWrapped('P2010', '0A000', 'LOCK TABLE is not supported here'))).toBe(false);
  });

  it('When the server is shutting down, crashed, not yet accepting, out of disk or the session timed out, then it is unavailability', () => {
    for (const code of ['57P01', '57P02', '57P03', '57P05', '53100', '53300', '08006', '08001', '08003']) {
      expect([code, isDatabaseUnavailable(pgError(code))]).toEqual([code, true]);
      expect([code, isDatabaseUnavailable(prismaWrapped('P2010', code))]).toEqual([code, true]);
    }
    for (const code of ['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2037']) {
      expect([code, isDatabaseUnavailable(Object.assign(new Error('x'), { code }))]).toEqual([code, true]);
    }
    expect(isDatabaseUnavailable(new Error('the database system is in recovery mode'))).toBe(true);
  });

  it('When the error is a conflict, a constraint or a bug, then it is not unavailability (it stays what it is)', () => {
    for (const code of ['40001', '40P01', '23505', '23503', '42P01', '42601', '22P02']) {
      expect([code, isDatabaseUnavailable(pgError(code))]).toEqual([code, false]);
      expect([code, isDatabaseUnavailable(prismaWrapped('P2010', code))]).toEqual([code, false]);
    }
    for (const code of ['P2002', 'P2003', 'P2025', 'P2034']) {
      expect([code, isDatabaseUnavailable(Object.assign(new Error('x'), { code }))]).toEqual([code, false]);
    }
    expect(isDatabaseUnavailable(new TypeError('Cannot read properties of undefined'))).toBe(false);
  });
});
