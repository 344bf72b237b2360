/**
 * Operator CLI: a project's tables (the dashboard's database tab). `tables ddl` runs one DDL
 * statement (from --sql or --file) in the public or preview schema; `tables copy-preview` copies
 * preview's structure to public (additive; --dry-run prints the statements only); `tables quota`
 * shows a project's storage limits and usage, and with --rows/--bytes overrides them for one schema.
 */
import { readFileSync } from 'node:fs';
import { flagSet, flagValue, parseChoice, UsageError, type ParsedArgs } from './args.js';
import type { Command } from './command.js';
import { fromLocalFile } from './local-file.js';
import * as f from './format.js';

const SCHEMAS = ['public', 'preview'] as const;

function schemaOf(args: ParsedArgs): (typeof SCHEMAS)[number] {
  const raw = flagValue(args, 'schema');
  return raw === undefined ? 'public' : parseChoice(raw, '--schema', SCHEMAS);
}

function sqlOf(args: ParsedArgs): string {
  const sql = flagValue(args, 'sql');
  const file = flagValue(args, 'file');
  if ((sql === undefined) === (file === undefined)) throw new UsageError('tables ddl needs exactly one of --sql or --file');
  if (sql !== undefined) return sql;
  return fromLocalFile(`--file ${file}`, () => readFileSync(file!, 'utf8'));
}

const list = (items: string[]) => (items.length ? items.map((s) => `  ${s}`).join('\n') : '  (none)');

export const TABLE_COMMANDS: Command[] = [
  {
    group: 'tables', name: 'list', args: ['<projectId>'], options: '[--schema public|preview]', flags: ['schema'],
    summary: "List a project's tables and their columns (default schema public)",
    async run(api, [projectId], args) {
      const data = await api.listTables(projectId, { schema: schemaOf(args) });
      const rows = data.tables.flatMap((t) =>
        t.columns.map((c, i) => [i === 0 ? t.name : '', c.name, c.type, c.nullable ? 'yes' : 'no', c.is_primary_key ? 'pk' : '', c.default_value ?? '']),
      );
      return { data, human: f.table(['TABLE', 'COLUMN', 'TYPE', 'NULL', 'KEY', 'DEFAULT'], rows, `No tables in the ${data.schema} schema.`) };
    },
  },
  {
    group: 'tables', name: 'ddl', args: ['<projectId>'], options: '(--sql SQL | --file PATH) [--schema public|preview]', flags: ['schema', 'sql', 'file'],
    summary: 'Run one DDL statement (CREATE/ALTER/DROP TABLE, INDEX, …) as the project in its public or preview schema',
    async run(api, [projectId], args) {
      const data = await api.runTableDdl(projectId, { schema: schemaOf(args), sql: sqlOf(args) });
      return { data, human: `${data.command} done in the ${data.schema} schema.` };
    },
  },
  {
    group: 'tables', name: 'copy-preview', args: ['<projectId>'], options: '[--dry-run]', flags: ['dry-run'],
    summary: "Copy preview's table structure to public (additive, no rows); --dry-run shows the statements",
    async run(api, [projectId], args) {
      const data = await api.copyPreviewSchema(projectId, { dry_run: flagSet(args, 'dry-run') });
      const human = [
        data.dry_run ? 'Dry run: nothing was changed. Statements:' : 'Statements run:',
        list(data.statements),
        'Differences left as they are:',
        list(data.differences),
      ].join('\n');
      return { data, human };
    },
  },
];

/** `tables create`: a structured table description from a JSON file (`{ "name", "columns": [...] }`). */
TABLE_COMMANDS.splice(1, 0, {
  group: 'tables', name: 'create', args: ['<projectId>'], options: '--file TABLE.json [--schema public|preview]', flags: ['schema', 'file'],
  summary: 'Create a table from a JSON description {"name", "columns": [{"name", "type", "nullable", "default", "primary_key"}]}',
  async run(api, [projectId], args) {
    const file = flagValue(args, 'file');
    if (file === undefined) throw new UsageError('tables create needs --file');
    const spec: { name?: unknown; columns?: unknown } = fromLocalFile(`a JSON table description from ${file}`, () => JSON.parse(readFileSync(file, 'utf8')));
    const data = await api.createTable(projectId, { schema: schemaOf(args), name: spec.name as string, columns: spec.columns as never });
    const rows = data.columns.map((c) => [c.name, c.type, c.nullable ? 'yes' : 'no', c.is_primary_key ? 'pk' : '', c.default_value ?? '']);
    return { data, human: `Created table ${data.table} in the ${data.schema} schema.\n\n${f.table(['COLUMN', 'TYPE', 'NULL', 'KEY', 'DEFAULT'], rows, '')}` };
  },
});

/** A limit flag: a non-negative integer, or `default` (back to the configured default). */
function limitOf(args: ParsedArgs, name: string): number | null | undefined {
  const raw = flagValue(args, name);
  if (raw === undefined) return undefined;
  if (raw === 'default') return null;
  if (!/^\d{1,16}$/.test(raw)) throw new UsageError(`--${name} must be a non-negative integer or "default"`);
  return Number(raw);
}

TABLE_COMMANDS.push({
  group: 'tables', name: 'quota', args: ['<projectId>'], options: '[--schema public|preview] [--rows N|default] [--bytes N|default]', flags: ['schema', 'rows', 'bytes'],
  summary: "Show a project's table storage quota and usage per schema; --rows/--bytes override it for --schema (default public)",
  async run(api, [projectId], args) {
    const maxRows = limitOf(args, 'rows');
    const maxBytes = limitOf(args, 'bytes');
    const data = maxRows === undefined && maxBytes === undefined
      ? await api.getTableQuota(projectId)
      : await api.setTableQuota(projectId, { schema: schemaOf(args), max_rows: maxRows, max_bytes: maxBytes });
    const rows = data.schemas.map((q) => [
      q.schema, String(q.rows), `${q.max_rows}${q.rows_overridden ? ' (project)' : ''}`, String(q.bytes), `${q.max_bytes}${q.bytes_overridden ? ' (project)' : ''}`,
    ]);
    return { data, human: f.table(['SCHEMA', 'ROWS', 'MAX ROWS', 'BYTES', 'MAX BYTES'], rows, '') };
  },
});
