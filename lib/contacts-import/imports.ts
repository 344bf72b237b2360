/**
 * Contact CSV import: the request body is streamed to a file (never held in memory), checked for
 * a header with a `number` column, and imported by a job whose status, counts and progress are a
 * row anyone can read while it runs.
 *
 * Policy and why:
 * - Rows are applied in batches of `BATCH` lines, one transaction each, so progress is visible
 *   and a batch is never half-stored. Duplicates within the file are found through
 *   `contact_import_phones` (the first line of each number), not an in-memory set, so memory
 *   stays flat for a million-row file; a later line merges into the same contact and is reported.
 * - A contact changes only when the file says something new: a name fills a contact that has
 *   none (never replaces one, whether set before the import or by an earlier line of the file),
 *   tags are added, `opted_in` true opts in (when and from which import are recorded, once),
 *   false opts out. Re-importing the same file therefore changes nothing (all `unchanged`).
 * - Every line not imported as is gets a report row with its line number, a stable code and a
 *   text true to the line (reasons.ts).
 * - Fair share: a project's imports apply one batch at a time in this instance (the others of
 *   the same project wait their turn, FIFO), so a project starting many imports holds at most
 *   one of the platform's connections for them.
 * - The job runs in the instance that received the file. An import interrupted by a crash is
 *   marked `failed` at the next start (see `failInterrupted`); re-sending the file is safe because
 *   an import is idempotent.
 */
import { createWriteStream, createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { Transform, type Readable } from 'node:stream';
import type { components } from '../../generated/api.js';
import type { Deps } from '../deps.js';
import { ApiError } from '../platform/errors.js';
import { readCsv, type CsvRecord } from './csv.js';
import { classifyNumber, csvReason, type ImportRowCode, type RowReason } from './reasons.js';
import { UUID } from '../platform/ids.js';
import { Slots } from '../platform/fair-shares.js';
import { upsertImportedContacts } from '../conversations/contact-store.js';
import type { Database } from '../platform/db/database.js';
import { inTransaction } from '../platform/db/transaction.js';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';

export type ImportView = components['schemas']['ContactImport'];

export const MAX_IMPORT_BYTES = 256 * 1024 * 1024;
const BATCH = 1000;
const COLUMNS = ['number', 'name', 'tags', 'opted_in'] as const;
const TRUE = new Set(['true', 'yes', 'y', '1']);
const FALSE = new Set(['false', 'no', 'n', '0']);
const running = new Set<Promise<void>>();
/** One batch at a time per project (see the policy above). */
const batchTurns = new Map<string, Slots>();
const BATCH_TURN_WAIT_MS = 60_000;

export function importId(raw: string): string {
  if (!UUID.test(raw)) throw new ApiError('invalid_id', `Malformed id "${raw.slice(0, 64)}": a UUID is expected.`);
  return raw.toLowerCase();
}

function invalidCsv(message: string): ApiError {
  return new ApiError('invalid_csv', message);
}

/** E.164 digits of a number as written, with `defaultCountry` for numbers without a country code. */
export function normalizeNumber(raw: string, defaultCountry: string | undefined): string | undefined {
  const r = classifyNumber(raw, defaultCountry);
  return 'phone' in r ? r.phone : undefined;
}

/** A report row: line, code, text, the number as written. */
type ReportRow = [number, ImportRowCode, string, string | null];

interface Header {
  index: Partial<Record<(typeof COLUMNS)[number], number>>;
  ignored: string[];
}

function readHeader(rec: CsvRecord): Header {
  if (rec.error) throw invalidCsv(`The header line is not valid CSV (${rec.error}).`);
  const index: Header['index'] = {};
  const ignored: string[] = [];
  rec.fields.forEach((raw, i) => {
    const name = raw.trim().toLowerCase();
    if ((COLUMNS as readonly string[]).includes(name) && index[name as keyof Header['index']] === undefined) index[name as keyof Header['index']] = i;
    else ignored.push(raw.trim().slice(0, 100));
  });
  if (index.number === undefined) {
    throw invalidCsv(`No "number" column in the header (found: ${rec.fields.map((f) => f.trim().slice(0, 40)).join(', ').slice(0, 300)}). Columns: number, name, tags, opted_in.`);
  }
  return { index, ignored };
}

/** Streams the request body to a file, checks the header, records the import and starts its job. */
export async function startImport(
  deps: Deps,
  projectId: string,
  body: Readable,
  opts: { defaultCountry?: string; filename?: string },
): Promise<ImportView> {
  const dir = path.join(deps.config.dataDir, 'imports');
  await fs.mkdir(dir, { recursive: true });
  const id = randomUUID();
  const file = path.join(dir, `${id}.csv`);
  let bytes = 0;
  try {
    await pipeline(
      body,
      new Transform({
        transform(chunk: Buffer, _enc, cb) {
          bytes += chunk.length;
          if (bytes > MAX_IMPORT_BYTES) cb(new ApiError('payload_too_large', `A contact import is at most ${MAX_IMPORT_BYTES} bytes.`));
          else cb(null, chunk);
        },
      }),
      createWriteStream(file),
    );
    if (bytes === 0) throw invalidCsv('The file is empty.');
    let header: Header | undefined;
    let dataLine = false;
    for await (const rec of readCsv(createReadStream(file, { end: 1024 * 1024 }))) {
      if (!header) header = readHeader(rec);
      else {
        dataLine = true;
        break;
      }
    }
    if (!header) throw invalidCsv('The file has no header line.');
    if (!dataLine) throw invalidCsv('The file has a header but no data lines.');
    const now = deps.clock.now();
    await execute(deps.db.sql,
      `INSERT INTO contact_imports (id, project_id, status, default_country, filename, bytes_total, ignored_columns, created_at, heartbeat_at)
       VALUES ($1, $2, 'queued', $3, $4, $5, $6, $7, now())`,
      id, projectId, opts.defaultCountry ?? null, opts.filename ?? null, bytes, header.ignored, now,
    );
  } catch (e) {
    await fs.rm(file, { force: true });
    throw e;
  }
  const job = runImport(deps, id, file).finally(() => running.delete(job));
  running.add(job);
  return getImport(deps.db.sql, projectId, id);
}

/** Waits for the imports running in this process (tests, shutdown). */
export async function importsSettled(): Promise<void> {
  while (running.size) await Promise.allSettled([...running]);
}

interface Line {
  line: number;
  phone: string;
  raw: string;
  name?: string;
  tags: string[];
  optIn?: boolean;
}

async function runImport(deps: Deps, id: string, file: string): Promise<void> {
  const { sql } = deps.db;
  try {
    const rows = await queryRows<{ project_id: string; default_country: string | null }>(sql,
      `UPDATE contact_imports SET status = 'running', started_at = $2, heartbeat_at = now() WHERE id = $1 RETURNING project_id, default_country`,
      id, deps.clock.now(),
    );
    const { project_id: projectId, default_country: country } = rows[0];
    let header: Header | undefined;
    let batch: Line[] = [];
    let rejects: ReportRow[] = [];
    let rowsRead = 0;
    const counter = { bytes: 0 };
    const source = createReadStream(file).on('data', (c) => (counter.bytes += c.length));
    let turns = batchTurns.get(projectId);
    if (!turns) batchTurns.set(projectId, (turns = new Slots(1)));
    const flush = async () => {
      if (!(await turns!.acquire(BATCH_TURN_WAIT_MS))) throw new Error('the project\'s other imports kept the database busy; re-send the file');
      try {
        await applyBatch(deps.db, id, projectId, batch, rejects, rowsRead, counter.bytes, deps.clock.now());
      } finally {
        turns!.release();
      }
      batch = [];
      rejects = [];
    };
    for await (const rec of readCsv(source)) {
      if (!header) {
        header = readHeader(rec);
        continue;
      }
      rowsRead++;
      const raw = header.index.number !== undefined ? rec.fields[header.index.number] ?? '' : '';
      const reject = (r: RowReason) => rejects.push([rec.line, r.code, r.reason, raw ? raw.slice(0, 64) : null]);
      if (rec.error) reject(csvReason(rec.error));
      else if (raw.trim() === '') reject({ code: 'missing_number', reason: 'no number' });
      else {
        const number = classifyNumber(raw, country ?? undefined);
        const optRaw = header.index.opted_in !== undefined ? (rec.fields[header.index.opted_in] ?? '').trim().toLowerCase() : '';
        if (!('phone' in number)) reject(number);
        else if (optRaw !== '' && !TRUE.has(optRaw) && !FALSE.has(optRaw)) reject({ code: 'invalid_opted_in', reason: `opted_in "${optRaw.slice(0, 20)}" is not true/false/yes/no/1/0 (blank means unknown)` });
        else {
          const name = header.index.name !== undefined ? (rec.fields[header.index.name] ?? '').trim() : '';
          const tagText = header.index.tags !== undefined ? rec.fields[header.index.tags] ?? '' : '';
          const tags = [...new Set(tagText.split(/[;|]/).map((t) => t.trim()).filter((t) => t !== ''))];
          if (name.length > 200) reject({ code: 'name_too_long', reason: 'name longer than 200 characters' });
          else if (tags.some((t) => t.length > 100)) reject({ code: 'tag_too_long', reason: 'a tag longer than 100 characters' });
          else batch.push({ line: rec.line, phone: number.phone, raw, name: name || undefined, tags, optIn: optRaw === '' ? undefined : TRUE.has(optRaw) });
        }
      }
      if (batch.length + rejects.length >= BATCH) await flush();
    }
    await flush();
    await execute(sql, `UPDATE contact_imports SET status = 'completed', completed_at = $2, bytes_read = bytes_total WHERE id = $1`, id, deps.clock.now());
  } catch (e) {
    deps.logger.warn('contact import failed', { import_id: id, error: e instanceof Error ? e.message : String(e) });
    await persistently(() =>
      execute(sql, `UPDATE contact_imports SET status = 'failed', error = $2, completed_at = $3 WHERE id = $1`, id, e instanceof Error ? e.message.slice(0, 500) : 'failed', deps.clock.now()),
    );
  } finally {
    await persistently(() => execute(sql, 'DELETE FROM contact_import_phones WHERE import_id = $1', id));
    await fs.rm(file, { force: true }).catch(() => undefined);
  }
}

/**
 * Bookkeeping after a failure, retried for a few seconds: when the failure was the database
 * dropping its connections, the pool's next client may be a dead one too, and a single try left
 * the import `running` until the stale sweep (2 minutes) with the wrong reason.
 */
async function persistently(fn: () => Promise<unknown>): Promise<void> {
  for (let attempt = 0; attempt < 6; attempt++) {
    try {
      await fn();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
    }
  }
}

/**
 * One batch in one transaction: numbers seen on an earlier line merge (reported), the rest are
 * upserted, and counts and progress move together with them. Takes the Database to open that
 * transaction (its pool named only for that).
 */
async function applyBatch(
  db: Pick<Database, 'pool'>,
  id: string,
  projectId: string,
  batch: Line[],
  rejects: ReportRow[],
  rowsRead: number,
  bytesRead: number,
  now: Date,
): Promise<void> {
  await inTransaction(db.pool, async (tx) => {
    // In-batch duplicates merge into their first line; earlier batches' numbers are in contact_import_phones.
    const first = new Map<string, Line>();
    const merged: ReportRow[] = [];
    for (const l of batch) {
      const f = first.get(l.phone);
      if (!f) {
        first.set(l.phone, { ...l, tags: [...l.tags] });
        continue;
      }
      // A later line fills a name only where the earlier one gave none.
      f.name ??= l.name;
      for (const t of l.tags) if (!f.tags.includes(t)) f.tags.push(t);
      if (l.optIn !== undefined) f.optIn = f.optIn === false ? false : l.optIn;
      merged.push([l.line, 'duplicate', `duplicate of line ${f.line}: merged into the same contact`, l.raw.slice(0, 64)]);
    }
    const uniques = [...first.values()];
    const seen = await queryRows<{ phone: string }>(tx,
      `INSERT INTO contact_import_phones (import_id, phone, first_line)
       SELECT $1, p, l FROM unnest($2::text[], $3::int[]) AS u(p, l) ON CONFLICT DO NOTHING RETURNING phone`,
      id, uniques.map((u) => u.phone), uniques.map((u) => u.line),
    );
    const fresh = new Set(seen.map((r) => r.phone));
    const later = uniques.filter((u) => !fresh.has(u.phone));
    if (later.length) {
      const earlier = await queryRows<{ phone: string; first_line: number }>(tx,
        'SELECT phone, first_line FROM contact_import_phones WHERE import_id = $1 AND phone = ANY($2::text[])',
        id, later.map((u) => u.phone),
      );
      const lineOf = new Map(earlier.map((r) => [r.phone, r.first_line]));
      for (const u of later) merged.push([u.line, 'duplicate', `duplicate of line ${lineOf.get(u.phone)}: merged into the same contact`, u.raw.slice(0, 64)]);
    }
    const asJson = (ls: Line[], opt: (l: Line) => boolean | null) => JSON.stringify(ls.map((u) => ({ phone: u.phone, name: u.name ?? null, tags: u.tags, opt: opt(u) })));
    const rows = await upsertImportedContacts(tx, projectId, id, now, asJson(uniques.filter((u) => fresh.has(u.phone)), (u) => u.optIn ?? null));
    // Lines repeating a number of an earlier batch merge into the contact too (tags added, a name
    // filled); of their opted_in only an opt-out counts, as within a batch an opt-out is kept.
    if (later.length) await upsertImportedContacts(tx, projectId, id, now, asJson(later, (u) => (u.optIn === false ? false : null)));
    const created = rows.filter((r) => r.created).length;
    const updated = rows.length - created;
    const unchanged = fresh.size - rows.length;
    const report = [...rejects.map((r) => [...r, 'rejected'] as const), ...merged.map((r) => [...r, 'merged'] as const)];
    if (report.length) {
      await execute(tx,
        `INSERT INTO contact_import_rows (import_id, line, code, reason, number, outcome)
         SELECT $1, l, c, r, n, o FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u(l, c, r, n, o) ON CONFLICT DO NOTHING`,
        id, report.map((r) => r[0]), report.map((r) => r[1]), report.map((r) => r[2]), report.map((r) => r[3]), report.map((r) => r[4]),
      );
    }
    await execute(tx,
      `UPDATE contact_imports SET rows_total = $2, created = created + $3, updated = updated + $4, unchanged = unchanged + $5,
              merged = merged + $6, rejected = rejected + $7, bytes_read = LEAST(bytes_total, $8), heartbeat_at = now() WHERE id = $1`,
      id, rowsRead, created, updated, unchanged, merged.length, rejects.length, bytesRead,
    );
  });
}

interface ImportRow {
  id: string;
  project_id: string;
  status: string;
  default_country: string | null;
  filename: string | null;
  /** int8: a bigint on the handle. */
  bytes_total: bigint;
  bytes_read: bigint;
  rows_total: number;
  created: number;
  updated: number;
  unchanged: number;
  merged: number;
  rejected: number;
  error: string | null;
  ignored_columns: string[];
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}

export async function getImport(tx: Tx, projectId: string, id: string): Promise<ImportView> {
  const [r] = await queryRows<ImportRow>(tx, 'SELECT * FROM contact_imports WHERE id = $1 AND project_id = $2', id, projectId);
  if (!r) throw new ApiError('not_found', `No contact import ${id} in this project.`);
  const total = Number(r.bytes_total);
  const read = Number(r.bytes_read);
  return {
    id: r.id,
    project_id: r.project_id,
    status: r.status as ImportView['status'],
    filename: r.filename,
    default_country: r.default_country,
    progress: { bytes_read: read, bytes_total: total, fraction: r.status === 'completed' ? 1 : total ? Math.min(1, read / total) : 0 },
    counts: { rows: r.rows_total, created: r.created, updated: r.updated, unchanged: r.unchanged, merged: r.merged, rejected: r.rejected },
    ignored_columns: r.ignored_columns,
    error: r.error,
    created_at: r.created_at.toISOString(),
    started_at: r.started_at?.toISOString() ?? null,
    completed_at: r.completed_at?.toISOString() ?? null,
  };
}

/** The operator's read of an import by id alone (any project); 404 when unknown. */
export async function getImportAnyProject(tx: Tx, id: string): Promise<ImportView> {
  const rows = await queryRows<{ project_id: string }>(tx, 'SELECT project_id FROM contact_imports WHERE id = $1', id);
  if (!rows[0]) throw new ApiError('not_found', `No contact import ${id}.`);
  return getImport(tx, rows[0].project_id, id);
}

export async function listImportRows(tx: Tx, id: string, limit: number, offset: number) {
  const [total] = await queryRows<{ n: bigint }>(tx, 'SELECT count(*)::bigint AS n FROM contact_import_rows WHERE import_id = $1', id);
  const rows = await queryRows<{ line: number; outcome: 'rejected' | 'merged'; code: ImportRowCode; reason: string; number: string | null }>(tx,
    'SELECT line, outcome, code, reason, number FROM contact_import_rows WHERE import_id = $1 ORDER BY line LIMIT $2 OFFSET $3',
    id, limit, offset,
  );
  return { rows, total: Number(total.n) };
}

/**
 * Imports cut short by a crash or a stop (their heartbeat, moved after every batch by the database
 * clock, is older than `staleMs`) are failed with a reason: re-sending the file is safe.
 * Called at start-up and by the broadcast tick job, so another instance's running import is never touched.
 */
export async function failInterrupted(tx: Tx, now: Date, staleMs = 120_000): Promise<void> {
  await execute(tx,
    `UPDATE contact_imports SET status = 'failed', error = 'interrupted (the service stopped while importing); import the file again (imports are idempotent)', completed_at = $1
     WHERE status IN ('queued', 'running') AND heartbeat_at < now() - make_interval(secs => $2::float8 / 1000)`,
    now, staleMs,
  );
}
