/**
 * The shared blob store (BLOB_STORE=postgres, lib/platform/storage/postgres.ts) as two instances see
 * it (two pools on one database): bytes stored through one read back identical through the other,
 * in 1 MiB chunks; a replacement is whole; delete is idempotent; a missing key rejects. And the
 * start-up rules around it: BLOB_STORE's values, production's required settings (named, exit 78),
 * the wait for a PostgreSQL that answers late (lib/platform/db/wait.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../lib/platform/config.js';
import { applyMigrations } from '../../lib/platform/db/migrate.js';
import { waitForDatabase } from '../../lib/platform/db/wait.js';
import { productionProblems } from '../../lib/platform/production.js';
import { CHUNK_BYTES, PostgresBlobStore } from '../../lib/platform/storage/postgres.js';
import { blobStoreOf } from '../../lib/platform/storage/store-of.js';
import { LocalFsBlobStore } from '../../lib/platform/storage/local-fs.js';
import { createScratchDatabase } from '../support/db.js';
import { latePostgres } from '../support/late-postgres.js';

let scratch: { url: string; drop(): Promise<void> };
let poolA: pg.Pool;
let poolB: pg.Pool;
let dir: string;

beforeAll(async () => {
  scratch = await createScratchDatabase('blobs');
  await applyMigrations(scratch.url);
  poolA = new pg.Pool({ connectionString: scratch.url, max: 2 });
  poolB = new pg.Pool({ connectionString: scratch.url, max: 2 });
  for (const p of [poolA, poolB]) p.on('error', () => undefined);
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'blob-store-'));
}, 60_000);

afterAll(async () => {
  await poolA?.end();
  await poolB?.end();
  await scratch?.drop();
  await fs.rm(dir, { recursive: true, force: true });
});

async function tempFile(bytes: Buffer): Promise<string> {
  const file = path.join(dir, randomBytes(6).toString('hex'));
  await fs.writeFile(file, bytes);
  return file;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

const info = { size: 0, contentType: 'application/octet-stream', sha256: '' };

describe('the PostgreSQL blob store, two instances on one database', () => {
  it('When 2.5 MiB are stored through one instance, then the other reads them back byte for byte, from 3 chunks, and the temporary file is gone', async () => {
    const a = new PostgresBlobStore(poolA);
    const b = new PostgresBlobStore(poolB);
    const bytes = randomBytes(Math.floor(CHUNK_BYTES * 2.5));
    const file = await tempFile(bytes);
    await a.putFile('p1/med_big', file, info);
    expect((await readAll(await b.open('p1/med_big'))).equals(bytes)).toBe(true);
    const chunks = await poolA.query('SELECT count(*)::int AS n FROM blob_chunks WHERE key = $1', ['p1/med_big']);
    expect(chunks.rows[0].n).toBe(3);
    await expect(fs.access(file)).rejects.toThrow();
  });

  it('When a key is stored again, then readers get the new bytes only; an empty file reads back empty', async () => {
    const a = new PostgresBlobStore(poolA);
    const b = new PostgresBlobStore(poolB);
    await a.putFile('p1/f', await tempFile(randomBytes(CHUNK_BYTES + 10)), info);
    const second = Buffer.from('short now');
    await b.putFile('p1/f', await tempFile(second), info);
    expect((await readAll(await a.open('p1/f'))).equals(second)).toBe(true);
    await a.putFile('p1/empty', await tempFile(Buffer.alloc(0)), info);
    expect((await readAll(await b.open('p1/empty'))).length).toBe(0);
  });

  it('When a key is deleted (twice) or never stored, then opening it rejects, and a bad key is refused', async () => {
    const a = new PostgresBlobStore(poolA);
    const b = new PostgresBlobStore(poolB);
    await a.putFile('p1/gone', await tempFile(Buffer.from('x')), info);
    await b.delete('p1/gone');
    await b.delete('p1/gone');
    await expect(a.open('p1/gone')).rejects.toThrow('No blob "p1/gone"');
    await expect(a.open('p1/never')).rejects.toThrow();
    await expect(a.open('../etc/passwd')).rejects.toThrow('Invalid blob key');
  });

  it('When BLOB_STORE is postgres, local or unset, then the configured store is used; any other value is refused naming the setting', () => {
    const pg1 = loadConfig({ BLOB_STORE: 'postgres' });
    expect(blobStoreOf({ config: pg1, db: { pool: poolA } })).toBeInstanceOf(PostgresBlobStore);
    expect(blobStoreOf({ config: loadConfig({}) })).toBeInstanceOf(LocalFsBlobStore);
    expect(() => loadConfig({ BLOB_STORE: 's3' })).toThrow('Configuration: BLOB_STORE must be one of local, postgres, got "s3"');
  });
});

describe('production start-up rules', () => {
  const good = { NODE_ENV: 'production', DATABASE_URL: 'postgres://u:p@db/x', ENCRYPTION_KEY: randomBytes(32).toString('hex'), ADMIN_TOKEN: 'a'.repeat(40), GRAPH_BASE_URL: 'https://graph.facebook.com' };

  it('When every required production setting is given, then nothing is missing; each one left out is named', () => {
    expect(productionProblems(loadConfig(good))).toEqual([]);
    expect(productionProblems(loadConfig({ ...good, NODE_ENV: 'development', DATABASE_URL: '' }))).toEqual([]);
    for (const name of ['DATABASE_URL', 'ENCRYPTION_KEY', 'ADMIN_TOKEN', 'GRAPH_BASE_URL'] as const) {
      const problems = productionProblems(loadConfig({ ...good, [name]: '' }));
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(new RegExp(`^${name}`));
    }
    expect(productionProblems(loadConfig({ ...good, GRAPH_BASE_URL: '', SIMULATOR_URL: 'http://127.0.0.1:4010' }))).toEqual([]);
  });

  it("When a production secret is malformed or still the example's placeholder, then it is named", () => {
    expect(productionProblems(loadConfig({ ...good, ENCRYPTION_KEY: 'short' }))).toEqual(['ENCRYPTION_KEY must be 32 bytes, as 64 hex characters or base64']);
    expect(productionProblems(loadConfig({ ...good, ADMIN_TOKEN: 'tiny' }))).toEqual(['ADMIN_TOKEN must be at least 32 characters in production']);
    expect(productionProblems(loadConfig({ ...good, ADMIN_TOKEN: 'CHANGE_ME_at_least_32_characters_openssl_rand_hex_32' }))).toEqual(["ADMIN_TOKEN still holds the example's CHANGE_ME placeholder"]);
  });

  it('When PostgreSQL answers only after a while, then the start waits, says so, and goes on once it answers; with no wait allowed it fails at once naming DATABASE_URL', async () => {
    const late = await latePostgres(scratch.url);
    await expect(waitForDatabase(late.url, { waitSeconds: 0, logger: { warn: () => undefined, info: () => undefined } })).rejects.toThrow(`cannot reach PostgreSQL at 127.0.0.1:${late.port} (DATABASE_URL)`);

    const said: string[] = [];
    const waiting = waitForDatabase(late.url, { waitSeconds: 30, logger: { warn: (m) => said.push(m), info: (m) => said.push(m) } });
    await new Promise((r) => setTimeout(r, 1500));
    await late.open();
    try {
      await waiting;
    } finally {
      late.close();
    }
    expect(said[0]).toMatch(/^waiting for PostgreSQL \(up to DATABASE_WAIT_SECONDS=30\): cannot reach PostgreSQL at 127\.0\.0\.1:/);
    expect(said.at(-1)).toBe('PostgreSQL answers: starting');
  }, 30_000);
});
