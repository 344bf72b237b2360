/**
 * `npm run check:transactions` (CI): PostgreSQL's own mechanisms are spelled in one place. A
 * transaction begins only in lib/platform/db/transaction.ts: on pg through inTransaction or
 * transactionOn, on Prisma through inPrismaTransaction (a `$transaction` of Prisma's is refused
 * elsewhere, so both clients' transactions take the same options and hand stores the same handle,
 * Tx). An advisory lock is taken only through lib/platform/db/locks.ts, a setting is set for a
 * transaction only through transaction.ts (its `local` option, setLocal). So a move to another
 * database, or a change of how transactions run, has one folder to change. This fails on a BEGIN,
 * a `$transaction`, an advisory lock, a SET LOCAL, a SKIP LOCKED claim or a LISTEN written in any
 * other file of the service (comments aside), and on SQL sent through Prisma's `$queryRawUnsafe`
 * (a store runs it on the handle, which either client carries). A LISTEN connection is held only
 * through lib/platform/db/notifications.ts (listen).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sourceFiles } from './source-files.js';

const ROOTS = ['lib', 'jobs', 'http', 'handlers', 'middleware', 'channel', 'scripts', 'app.ts', 'server.ts', 'services.ts'];
/** Where they may be spelled: the database floor itself, and this check. */
const ALLOWED = [/^lib\/platform\/db\//, /^scripts\/check-transactions\.ts$/, /^scripts\/bench\//];
const RULES: Array<{ pattern: RegExp; what: string; instead: string }> = [
  { pattern: /(['"`]|;\s*)BEGIN\b/, what: 'a BEGIN', instead: 'inTransaction or transactionOn (lib/platform/db/transaction.ts)' },
  { pattern: /\$transaction\b/, what: 'a Prisma $transaction', instead: 'inPrismaTransaction (lib/platform/db/transaction.ts)' },
  { pattern: /\$(query|execute)RawUnsafe\b/, what: "Prisma's raw SQL", instead: 'queryRows or execute on the handle (lib/platform/db/tx.ts)' },
  { pattern: /pg_(try_)?advisory_(xact_)?(lock|unlock)/, what: 'an advisory lock', instead: 'lockForTransaction, tryLockSession (lib/platform/db/locks.ts)' },
  { pattern: /\bSET LOCAL\b/, what: 'a SET LOCAL', instead: "inTransaction's `local` option or setLocal (lib/platform/db/transaction.ts)" },
  { pattern: /SKIP LOCKED/, what: 'a SKIP LOCKED claim', instead: 'CLAIM_ROWS (lib/platform/db/claims.ts)' },
  { pattern: /(['"`]|;\s*)LISTEN\b|\.on\(\s*['"]notification['"]/, what: 'a LISTEN', instead: 'listen (lib/platform/db/notifications.ts)' },
];

export interface TxViolation {
  file: string;
  line: number;
  message: string;
}

/** The violations in one file's text (`file` relative to the root). */
export function violationsIn(file: string, text: string): TxViolation[] {
  if (ALLOWED.some((a) => a.test(file))) return [];
  const found: TxViolation[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    // Comments say why, and may name what they explain.
    if (line.startsWith('*') || line.startsWith('//') || line.startsWith('/*')) return;
    for (const r of RULES) if (r.pattern.test(line)) found.push({ file, line: i + 1, message: `${r.what} outside lib/platform/db: use ${r.instead}` });
  });
  return found;
}

export function transactionViolations(root: string): TxViolation[] {
  const files = sourceFiles(root, ROOTS);
  return files.flatMap((f) => violationsIn(f, fs.readFileSync(path.join(root, f), 'utf8')));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const found = transactionViolations(root);
  for (const v of found) console.error(`${v.file}:${v.line}: ${v.message}`);
  if (found.length) process.exit(1);
  console.log("transactions (pg and Prisma), raw SQL through Prisma, advisory locks, SET LOCAL, SKIP LOCKED and LISTEN are spelled only in lib/platform/db");
}
