/** Segments: named audience filters with a live count (SEGMENT_NOT_FOUND for unknown or foreign ids). */
import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/api.js';
import { ApiError } from '../platform/errors.js';
import { compileFilter, Params, parseFilter } from './filter.js';
import { segmentNotFound, UUID } from './audience.js';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';

export type SegmentView = components['schemas']['Segment'];

interface SegmentRow {
  id: string;
  project_id: string;
  name: string;
  filter: unknown;
  created_at: Date;
  updated_at: Date;
}

export function segmentId(raw: string): string {
  if (!UUID.test(raw)) throw new ApiError('invalid_id', `Malformed id "${raw.slice(0, 64)}": a UUID is expected.`);
  return raw.toLowerCase();
}

async function liveCount(db: Tx, projectId: string, filter: unknown): Promise<number> {
  const p = new Params([projectId]);
  const where = compileFilter(parseFilter(filter), p);
  const [row] = await queryRows<{ n: bigint }>(db, `SELECT count(*)::bigint AS n FROM contacts c WHERE c.project_id = $1 AND c.kind = 'customer' AND ${where}`, ...p.values);
  return Number(row.n);
}

function view(row: SegmentRow, count: number | null): SegmentView {
  return {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    filter: row.filter as SegmentView['filter'],
    contact_count: count,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export async function createSegment(db: Tx, projectId: string, name: string, filter: unknown, now: Date): Promise<SegmentView> {
  const parsed = parseFilter(filter);
  const rows = await queryRows<SegmentRow>(
    db,
    `INSERT INTO segments (id, project_id, name, filter, created_at, updated_at) VALUES ($1, $2, $3, $4::jsonb, $5, $5) RETURNING *`,
    randomUUID(), projectId, name, JSON.stringify(parsed), now,
  );
  return view(rows[0], await liveCount(db, projectId, parsed));
}

export async function getSegment(db: Tx, projectId: string, id: string): Promise<SegmentView> {
  const rows = await queryRows<SegmentRow>(db, 'SELECT * FROM segments WHERE id = $1 AND project_id = $2', id, projectId);
  if (!rows[0]) throw segmentNotFound(id);
  return view(rows[0], await liveCount(db, projectId, rows[0].filter));
}

export async function listSegments(db: Tx, projectId: string, limit: number, offset: number) {
  const [total] = await queryRows<{ n: bigint }>(db, 'SELECT count(*)::bigint AS n FROM segments WHERE project_id = $1', projectId);
  const rows = await queryRows<SegmentRow>(
    db,
    'SELECT * FROM segments WHERE project_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3',
    projectId, limit, offset,
  );
  return { segments: rows.map((r) => view(r, null)), total: Number(total.n) };
}

export async function updateSegment(db: Tx, projectId: string, id: string, change: { name?: string; filter?: unknown }, now: Date): Promise<SegmentView> {
  const filter = change.filter === undefined ? null : JSON.stringify(parseFilter(change.filter));
  const rows = await queryRows<SegmentRow>(
    db,
    `UPDATE segments SET name = COALESCE($3, name), filter = COALESCE($4::jsonb, filter), updated_at = $5
     WHERE id = $1 AND project_id = $2 RETURNING *`,
    id, projectId, change.name ?? null, filter, now,
  );
  if (!rows[0]) throw segmentNotFound(id);
  return view(rows[0], await liveCount(db, projectId, rows[0].filter));
}

export async function deleteSegment(db: Tx, projectId: string, id: string): Promise<void> {
  if (!(await execute(db, 'DELETE FROM segments WHERE id = $1 AND project_id = $2', id, projectId))) throw segmentNotFound(id);
}
