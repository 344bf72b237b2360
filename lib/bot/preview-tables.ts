/**
 * A preview's tables are the `preview` schema, production's are `public`. A table created for
 * production only (`ops tables ddl` defaults to public) is missing in a preview: the helper's
 * `table_not_found` then says so and names the fix, instead of only "no table".
 */
import type { Database } from '../platform/db/database.js';
import { queryRows } from '../platform/db/tx.js';
import { ApiError } from '../platform/errors.js';
import { physicalSchema } from '../tables/isolation.js';

/** What the explanation says of a table production has and the preview schema lacks (a deploy's sample run reads it). */
export const PUBLIC_ONLY = 'it exists in production (public) only';

/** `db`: the catalog and the schema's name are read on its handle. */
export async function explainPreviewTable(db: Pick<Database, 'sql'>, projectId: string, e: unknown): Promise<unknown> {
  if (!(e instanceof ApiError) || e.code !== 'table_not_found') return e;
  const table = (e.details as { table?: unknown } | undefined)?.table;
  if (typeof table !== 'string') return e;
  const found = await queryRows(db.sql, 'SELECT 1 AS found FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2', await physicalSchema(db.sql, projectId, 'public'), table)
    .then((rows) => rows.length > 0, () => false);
  const fix = `create it there: \`npm run ops -- tables ddl ${projectId} --schema preview --sql "CREATE TABLE ${table} (…)"\`, or \`tables create ${projectId} --schema preview --file TABLE.json\` (POST /admin/projects/${projectId}/tables with "schema": "preview")`;
  const message = found
    ? `No table "${table}" in the preview schema: ${PUBLIC_ONLY}. A preview reads and writes the preview schema; ${fix}.`
    : `No table "${table}" in the preview schema (a preview reads and writes the preview schema, production the public one); ${fix}.`;
  return new ApiError('table_not_found', message, e.details);
}
