/** The schema endpoint: a table's columns as the spec's column descriptors. */
import { loadTable } from './catalogue.js';
import { withProjectTx, type PlatformDb } from './isolation.js';
import type { TableSchema } from './names.js';
import type { TablesSettings } from './rows.js';

export interface ColumnDescriptor {
  name: string;
  type: string;
  nullable: boolean;
  default_value: string | null;
  is_primary_key: boolean;
}

/** `db`: the project's transaction is opened through its pool (lib/tables/isolation.ts). */
export function describeTable(db: PlatformDb, settings: TablesSettings, projectId: string, schema: TableSchema, table: string) {
  return withProjectTx(db, projectId, { readOnly: true, statementTimeoutMs: settings.statementTimeoutMs, schema }, async (client, storage) => {
    const t = await loadTable(client, storage.schemas[schema], schema, table);
    const columns: ColumnDescriptor[] = t.columns.map((c) => ({
      name: c.name,
      type: c.type,
      nullable: c.nullable,
      default_value: c.defaultValue,
      is_primary_key: c.pkPosition > 0,
    }));
    return { table: t.name, schema, columns };
  });
}
