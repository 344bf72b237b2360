/**
 * Tenants' storage is apart by construction (issue 44, item 2): a project's schemas and role are
 * named from `projects.storage_key` (assigned by the database, unique, never changed), never from
 * its id. Before, `stem()` used a plain id as it was and a digest of any other id, so a project
 * created with the id `h` + 24 hex digits of sha256("proj-c") shared `proj-c`'s schemas and role.
 * Existing projects keep their names (migration storage_key).
 */
import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import type { TestApp } from '../support/app.js';
import { tablesHarness } from '../support/tables.js';
import { createScratchDatabase, withClient } from '../support/db.js';
import { storageNames } from '../../lib/tables/isolation.js';

let t: TestApp;
const h = tablesHarness({}, (started) => (t = started.t));
const made = h.made;

/** The name the old code gave an id's storage (lib/tables/names.ts before storage_key). */
function legacyStem(id: string): string {
  const lower = id.toLowerCase();
  return /^[a-z0-9_]{1,40}$/.test(lower) ? lower : `h${createHash('sha256').update(lower, 'utf8').digest('hex').slice(0, 24)}`;
}

const admin = (method: 'get' | 'post', url: string, body?: object) => {
  const req = request(t.app)[method](url).set('Authorization', `Bearer ${t.adminToken}`);
  return body ? req.send(body) : req;
};

async function create(id: string) {
  const res = await admin('post', '/admin/projects', { id, name: id });
  expect(res.status).toBe(201);
  made.push(id);
  return { id, key: (await t.admin.key(id, ['tables:read', 'tables:write'])).secret };
}

const rows = (key: string, table: string) => request(t.app).get(`/v1/tables/${table}/rows`).set('Authorization', `Bearer ${key}`);

/** Creates `notes` with one row of `project`'s own, through the operator API and the tables API. */
async function writeNote(p: { id: string; key: string }, body: string) {
  const ddl = await admin('post', `/admin/projects/${p.id}/tables/ddl`, { sql: `CREATE TABLE notes (id, body) AS VALUES (1, 'draft')` });
  expect({ status: ddl.status, body: ddl.body.error }).toEqual({ status: 200, body: undefined });
  const patch = await request(t.app).patch('/v1/tables/notes/rows').set('Authorization', `Bearer ${p.key}`)
    .send({ filters: [{ column: 'id', op: 'eq', value: 1 }], set: { body } });
  expect(patch.status).toBe(200);
  expect(patch.body.data.affected).toBe(1);
}

describe('projects whose ids named one storage', () => {
  for (const order of ['plain id first', 'digest-shaped id first'] as const) {
    it(`When "proj-…" and "h" + its digest are both created (${order}), then neither sees the other's rows`, async () => {
      const plain = order === 'plain id first' ? 'proj-c' : 'proj-d';
      const twin = `h${createHash('sha256').update(plain).digest('hex').slice(0, 24)}`;
      // The two ids the old names could not tell apart.
      expect(legacyStem(twin)).toBe(legacyStem(plain));
      const [first, second] = order === 'plain id first' ? [plain, twin] : [twin, plain];
      const a = await create(first);
      await writeNote(a, `secret of ${first}`);
      const b = await create(second);

      // The second project has no table yet: the first one's is not its.
      const missing = await rows(b.key, 'notes');
      expect({ status: missing.status, code: missing.body.error?.code }).toEqual({ status: 404, code: 'table_not_found' });
      // It creates its own (the name is free in its schema) and sees only its own row.
      await writeNote(b, `secret of ${second}`);
      expect((await rows(b.key, 'notes')).body.data.rows).toEqual([{ id: 1, body: `secret of ${second}` }]);
      expect((await rows(a.key, 'notes')).body.data.rows).toEqual([{ id: 1, body: `secret of ${first}` }]);

      const [na, nb] = [await storageNames(t.db.sql, a.id), await storageNames(t.db.sql, b.id)];
      expect(na.role).not.toBe(nb.role);
      expect(new Set([na.schemas.public, na.schemas.preview, nb.schemas.public, nb.schemas.preview]).size).toBe(4);
    });
  }

  it('When a project is created, then its storage key is the database\'s and never changes', async () => {
    const p = await create('key-holder');
    const row = await t.db.pool.query<{ storage_key: string }>('SELECT storage_key FROM projects WHERE id = $1', [p.id]);
    expect(row.rows[0].storage_key).toMatch(/^k[0-9a-f]{24}$/);
    expect((await storageNames(t.db.sql, p.id)).schemas.public).toBe(`p_${row.rows[0].storage_key}_public`);
    await expect(t.db.pool.query("UPDATE projects SET storage_key = 'proj_c' WHERE id = $1", [p.id])).rejects.toThrow(/never changes/);
    await expect(t.db.pool.query("UPDATE projects SET storage_key = 'Bad-Key' WHERE id = $1", [p.id])).rejects.toThrow();
  });
});

describe('migration storage_key', () => {
  it('When projects exist before it, then each keeps the name its storage had, and of two that shared one only the first keeps it', async () => {
    const dir = path.resolve('prisma/migrations');
    const folder = readdirSync(dir).find((f) => f.endsWith('_storage_key'))!;
    const sql = readFileSync(path.join(dir, folder, 'migration.sql'), 'utf8');
    const scratch = await createScratchDatabase('storage_key');
    try {
      await withClient(scratch.url, async (c) => {
        // The columns the migration reads, as the table was before it.
        await c.query('CREATE TABLE projects (id text PRIMARY KEY, name text NOT NULL, created_at timestamptz(3) NOT NULL DEFAULT now())');
        const ids = ['proj-c', 'prj_abc123', 'a'.repeat(40), 'b'.repeat(41), 'acme-shop', 'x_1'];
        for (const id of ids) await c.query("INSERT INTO projects (id, name, created_at) VALUES ($1, $1, now() - interval '1 day')", [id]);
        const twin = legacyStem('proj-c');
        await c.query('INSERT INTO projects (id, name) VALUES ($1, $1)', [twin]);
        await c.query(sql);
        const keys = new Map((await c.query<{ id: string; storage_key: string }>('SELECT id, storage_key FROM projects')).rows.map((r) => [r.id, r.storage_key]));
        for (const id of ids) expect({ id, key: keys.get(id) }).toEqual({ id, key: legacyStem(id) });
        // The later of the two that shared `proj-c`'s storage gets a storage of its own.
        expect(keys.get(twin)).toMatch(/^k[0-9a-f]{24}$/);
        const fresh = await c.query<{ storage_key: string }>("INSERT INTO projects (id, name) VALUES ('new-one', 'n') RETURNING storage_key");
        expect(fresh.rows[0].storage_key).toMatch(/^k[0-9a-f]{24}$/);
      });
    } finally {
      await scratch.drop();
    }
  });
});
