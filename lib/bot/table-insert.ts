/**
 * `tables.insert` for the bot: one row into a project table, as the project's role (the same
 * isolation as every table operation, lib/tables/isolation.ts), values bound and cast to the
 * column types, answered with the row as stored; a row that does not fit what remains of the
 * schema's storage quota is 409 `table_quota_exceeded`, judged before it is written
 * (lib/tables/quota.ts).
 */
import type pg from 'pg';
import { ApiError } from '../platform/errors.js';
import { columnOf, loadTable, platformTableForbidden } from '../tables/catalogue.js';
import { physicalSchema, withProjectTx } from '../tables/isolation.js';
import { isPlatformTable, quoteIdent, type TableSchema } from '../tables/names.js';
import { mapQueryErrors } from '../tables/pg-errors.js';
import { col, Params, valueText } from '../tables/sql.js';
import { rowTypes } from '../tables/values.js';
import { enforceQuota, judgeGrowth, limitsOf, lockQuota, ROW_VERSION_OVERHEAD, usageOf, type QuotaDefaults } from '../tables/quota.js';

export async function insertRow(pool: pg.Pool, statementTimeoutMs: number, projectId: string, schema: TableSchema, tableName: string, row: unknown, quota?: QuotaDefaults): Promise<Record<string, unknown>> {
  if (typeof tableName !== 'string') throw new ApiError('invalid_request', 'table must be a string.');
  if (isPlatformTable(tableName)) throw platformTableForbidden(tableName);
  if (typeof row !== 'object' || row === null || Array.isArray(row)) throw new ApiError('invalid_request', 'row must be an object of column values.');
  const physical = await physicalSchema(pool, projectId, schema);
  const limit = await limitsOf(pool, quota, projectId, schema);
  return withProjectTx(pool, projectId, { readOnly: false, statementTimeoutMs, schema }, async (client) => {
    const table = await loadTable(client, physical, schema, tableName);
    const params = new Params();
    const names: string[] = [];
    const values: string[] = [];
    const casts: { value: string; column: ReturnType<typeof columnOf> }[] = [];
    for (const [name, value] of Object.entries(row as Record<string, unknown>)) {
      const c = columnOf(table, name, 'row');
      if (value !== null && typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
        throw new ApiError('invalid_request', `The value of "${name}" must be a string, number, boolean or null.`);
      }
      names.push(col(c));
      if (value === null) values.push('NULL');
      else {
        casts.push({ value: valueText(value), column: c });
        values.push(params.add(valueText(value), c.castType));
      }
    }
    const from = `${quoteIdent(physical)}.${quoteIdent(table.name)}`;
    const cols = table.columns.map(col).join(', ');
    const text = names.length
      ? `INSERT INTO ${from} (${names.join(', ')}) VALUES (${values.join(', ')}) RETURNING ${cols}`
      : `INSERT INTO ${from} DEFAULT VALUES RETURNING ${cols}`;
    // Judged before it runs by what it writes (lib/tables/quota.ts): one row, its values
    // uncompressed. Refused, it has written nothing, so it leaves nothing on disk either.
    await lockQuota(client, physical);
    const before = await usageOf(client, physical);
    const bytes = casts.reduce((n, x) => n + Buffer.byteLength(x.value) + 4, ROW_VERSION_OVERHEAD);
    judgeGrowth(schema, limit, before, { rows: 1, bytes });
    const res = await mapQueryErrors(client, { timeoutMs: statementTimeoutMs, casts }, () => client.query({ text, values: params.values, rowMode: 'array', types: rowTypes }));
    // The safety net: growth past the quota beyond what was judged is rolled back, 409.
    await enforceQuota(client, physical, schema, limit, before, true, bytes);
    const out = (res.rows as unknown[][])[0] ?? [];
    return Object.fromEntries(table.columns.map((c, i) => [c.name, out[i]]));
  });
}
