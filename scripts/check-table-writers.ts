/**
 * Who writes each table, checked in CI (`npm run check:writers`).
 *
 * Policy and why: a table (or a group of tables that change together) has one store module that is
 * its only writer, so a rule about its rows lives in one place. This lists every file that writes
 * each platform table, by raw SQL (INSERT INTO / UPDATE / DELETE FROM / MERGE INTO) or by Prisma
 * (`.<model>.create|update|upsert|delete…`), and fails when a table has a writer that
 * scripts/table-writers.baseline.json does not list. The baseline records the second writers that
 * exist today; it may only shrink (`--update` rewrites it from the tree, for a change that removes
 * writers). Tests, benchmarks and migrations are not writers of the service.
 */
import fs from 'node:fs';
import path from 'node:path';
import { sourceFiles } from './source-files.js';

const ROOTS = ['app.ts', 'server.ts', 'services.ts', 'lib', 'http', 'middleware', 'handlers', 'jobs', 'scripts'];
const SKIP = [/^scripts\/bench/, /^scripts\/compose-smoke\.ts$/, /^scripts\/check-table-writers\.ts$/, /^lib\/platform\/db\/migrate\.ts$/];
const BASELINE = 'scripts/table-writers.baseline.json';
const SQL_WRITE = /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|MERGE\s+INTO)\s+(?:ONLY\s+)?(?:public\.)?"?([a-z_][a-z0-9_]*)"?/g;
const PRISMA_WRITE = /\.([a-z][A-Za-z0-9]*)\.(?:create|createMany|createManyAndReturn|update|updateMany|updateManyAndReturn|upsert|delete|deleteMany)\s*\(/g;

/** Prisma model name (camelCase, as the client spells it) → table, from schema.prisma's @@map. */
export function prismaTables(schema: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of schema.matchAll(/^model\s+(\w+)\s*\{([\s\S]*?)^\}/gm)) {
    const table = /@@map\("([^"]+)"\)/.exec(m[2])?.[1] ?? m[1];
    out.set(m[1][0].toLowerCase() + m[1].slice(1), table);
  }
  return out;
}

/** Table → the files that write it. */
export function tableWriters(root: string): Map<string, Set<string>> {
  const tables = prismaTables(fs.readFileSync(path.join(root, 'prisma', 'schema.prisma'), 'utf8'));
  const known = new Set(tables.values());
  const writers = new Map<string, Set<string>>();
  const add = (table: string, file: string) => {
    if (!known.has(table)) return; // a project's own table, a temp table, a word in a message
    if (!writers.has(table)) writers.set(table, new Set());
    writers.get(table)!.add(file);
  };
  const files = sourceFiles(root, ROOTS).filter((f) => !SKIP.some((s) => s.test(f)));
  for (const file of files) {
    const text = fs.readFileSync(path.join(root, file), 'utf8').replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, '');
    for (const m of text.matchAll(SQL_WRITE)) add(m[1], file);
    for (const m of text.matchAll(PRISMA_WRITE)) if (tables.has(m[1])) add(tables.get(m[1])!, file);
  }
  return writers;
}

type Baseline = Record<string, string[]>;

/** Writers not allowed by the baseline (a table's first writer is always allowed). */
export function unexpectedWriters(writers: Map<string, Set<string>>, baseline: Baseline): string[] {
  const problems: string[] = [];
  for (const [table, files] of [...writers].sort()) {
    if (files.size <= 1) continue;
    const allowed = new Set(baseline[table] ?? []);
    const extra = [...files].filter((f) => !allowed.has(f));
    if (extra.length > 0) problems.push(`${table}: written by ${[...files].sort().join(', ')}; not in the baseline: ${extra.join(', ')}`);
  }
  return problems;
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const root = process.cwd();
  const writers = tableWriters(root);
  const multi = Object.fromEntries([...writers].filter(([, f]) => f.size > 1).sort().map(([t, f]) => [t, [...f].sort()]));
  if (process.argv.includes('--update')) {
    fs.writeFileSync(path.join(root, BASELINE), JSON.stringify(multi, null, 2) + '\n');
    console.log(`baseline rewritten: ${Object.keys(multi).length} table(s) with more than one writer`);
    process.exit(0);
  }
  const baseline: Baseline = fs.existsSync(path.join(root, BASELINE)) ? JSON.parse(fs.readFileSync(path.join(root, BASELINE), 'utf8')) : {};
  if (process.argv.includes('--list')) {
    for (const [table, files] of [...writers].sort()) console.log(`${table} (${files.size}): ${[...files].sort().join(', ')}`);
  }
  const single = [...writers.values()].filter((f) => f.size === 1).length;
  console.log(`${writers.size} tables written: ${single} by one module, ${writers.size - single} by more (baseline: ${Object.keys(baseline).length})`);
  const problems = unexpectedWriters(writers, baseline);
  for (const p of problems) console.error(p);
  if (problems.length > 0) {
    console.error('A table gained a writer: write through its store module (see the README, "The house"), or explain why in the baseline.');
    process.exit(1);
  }
}
