/**
 * PostgreSQL errors of table queries mapped to the API's codes: a database error is never passed
 * through, and never a 500 for something the caller's input caused.
 */
import type pg from 'pg';
import { ApiError } from '../platform/errors.js';
import type { ColumnInfo } from './catalogue.js';

export function sqlState(e: unknown): string | undefined {
  const code = (e as { code?: unknown })?.code;
  return typeof code === 'string' && code.length === 5 ? code : undefined;
}

export function queryTimeout(ms: number): ApiError {
  return new ApiError('query_timeout', `The query did not finish within the ${ms} ms statement timeout: narrow it with filters on indexed columns, or page with smaller pages.`, {
    timeout_ms: ms,
  });
}

function invalidValue(message: string, details: Record<string, unknown>): ApiError {
  return new ApiError('invalid_value', message, details);
}

/**
 * Finds which bound value does not fit its column's type (each cast probed alone in a savepoint),
 * so the 400 can name the column; falls back to a message without it.
 */
export async function firstBadCast(client: pg.PoolClient, casts: { value: string; column: ColumnInfo }[]): Promise<ApiError | undefined> {
  for (const { value, column } of casts) {
    await client.query('SAVEPOINT probe');
    try {
      await client.query(`SELECT CAST($1 AS ${column.castType})`, [value]);
      await client.query('RELEASE SAVEPOINT probe');
    } catch {
      await client.query('ROLLBACK TO SAVEPOINT probe');
      return invalidValue(`The value ${JSON.stringify(value)} does not fit column "${column.name}" of type ${column.type}.`, {
        column: column.name,
        type: column.type,
      });
    }
  }
  return undefined;
}

async function diagnoseCast(client: pg.PoolClient, casts: { value: string; column: ColumnInfo }[]): Promise<ApiError> {
  return (await firstBadCast(client, casts)) ?? invalidValue('A value does not fit its column\'s type.', {});
}

export interface QueryContext {
  timeoutMs: number;
  casts: { value: string; column: ColumnInfo }[];
}

/**
 * Runs `fn`; maps a failure caused by the input to its 4xx. A cast failure is diagnosed in the same
 * transaction, after rolling back to a savepoint taken before `fn`.
 */
export async function mapQueryErrors<T>(client: pg.PoolClient, ctx: QueryContext, fn: () => Promise<T>): Promise<T> {
  await client.query('SAVEPOINT q');
  try {
    const r = await fn();
    await client.query('RELEASE SAVEPOINT q');
    return r;
  } catch (e) {
    const state = sqlState(e);
    if (!state) throw e;
    await client.query('ROLLBACK TO SAVEPOINT q');
    const err = e as pg.DatabaseError;
    if (state === '57014' || state === '55P03') throw queryTimeout(ctx.timeoutMs);
    if (state.startsWith('22')) {
      if (state === '22001') throw invalidValue('A value is too long for its column.', { column: err.column ?? null });
      throw await diagnoseCast(client, ctx.casts);
    }
    if (state === '23502') throw new ApiError('conflict', `Column "${err.column}" may not be null.`, { column: err.column ?? null, constraint: null });
    if (state.startsWith('23')) {
      throw new ApiError('conflict', `The change violates constraint "${err.constraint ?? 'unknown'}".`, { constraint: err.constraint ?? null });
    }
    if (state === '42883' || state === '42804') {
      throw new ApiError('invalid_request', 'This comparison is not supported for the column\'s type.', { detail: err.message });
    }
    if (state === '428C9') throw new ApiError('invalid_request', 'A generated or identity column cannot be set.', {});
    throw e;
  }
}
