/**
 * The shared blob store in PostgreSQL (BLOB_STORE=postgres): every instance of a deployment reads
 * the bytes another one stored, with nothing to run beside the database the service already needs.
 *
 * Policy and why:
 * - Table `blob_chunks` (this module its only writer): a blob is rows of at most 1 MiB
 *   (`key`, `seq` from 0), so neither a write nor a read ever holds a whole 100 MB file in memory;
 *   a read fetches one chunk at a time as the consumer pulls.
 * - A write replaces the key in one transaction: a reader sees the old bytes or the new ones,
 *   never half a file. An empty file is one empty chunk, so `open` can tell it from a missing key.
 * - Backups: the bytes are in the database dump (docs/deploy.md).
 */
import { createReadStream, promises as fs } from 'node:fs';
import { Readable } from 'node:stream';
import type pg from 'pg';
import { inTransaction } from '../db/transaction.js';
import { checkKey, type BlobInfo, type BlobStore } from './blob-store.js';

export const CHUNK_BYTES = 1024 * 1024;

export class PostgresBlobStore implements BlobStore {
  constructor(private readonly pool: pg.Pool) {}

  async putFile(key: string, filePath: string, _info: BlobInfo): Promise<void> {
    checkKey(key);
    await inTransaction(this.pool, async (client) => {
      await client.query('DELETE FROM blob_chunks WHERE key = $1', [key]);
      let seq = 0;
      for await (const chunk of createReadStream(filePath, { highWaterMark: CHUNK_BYTES })) {
        await client.query('INSERT INTO blob_chunks (key, seq, data) VALUES ($1, $2, $3)', [key, seq++, chunk]);
      }
      if (seq === 0) await client.query('INSERT INTO blob_chunks (key, seq, data) VALUES ($1, 0, $2)', [key, Buffer.alloc(0)]);
    });
    await fs.rm(filePath, { force: true });
  }

  async open(key: string): Promise<Readable> {
    checkKey(key);
    const first = await this.chunk(key, 0);
    if (!first) throw Object.assign(new Error(`No blob "${key}"`), { code: 'ENOENT' });
    let seq = 0;
    const stream: Readable = new Readable({
      read: () => {
        const next = seq === 0 ? Promise.resolve(first) : this.chunk(key, seq);
        seq++;
        next.then(
          (data) => stream.push(data && data.length ? data : null),
          (e: unknown) => stream.destroy(e as Error),
        );
      },
    });
    return stream;
  }

  async delete(key: string): Promise<void> {
    await this.pool.query('DELETE FROM blob_chunks WHERE key = $1', [checkKey(key)]);
  }

  private async chunk(key: string, seq: number): Promise<Buffer | undefined> {
    const { rows } = await this.pool.query<{ data: Buffer }>('SELECT data FROM blob_chunks WHERE key = $1 AND seq = $2', [key, seq]);
    return rows[0]?.data;
  }
}
