/**
 * The default blob store: files under one root folder (DATA_DIR/media). Policy: keys map to paths
 * under the root only (checked keys, no `..`); a file is written under a temporary name and
 * renamed into place, so a reader never sees half a file; a move across file systems falls back
 * to a copy; files are private to the service's user (0600, folders 0700).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { checkKey, type BlobInfo, type BlobStore } from './blob-store.js';

export class LocalFsBlobStore implements BlobStore {
  constructor(readonly root: string) {}

  private pathOf(key: string): string {
    const p = path.resolve(this.root, checkKey(key));
    if (!p.startsWith(path.resolve(this.root) + path.sep)) throw new Error(`Invalid blob key "${key}"`);
    return p;
  }

  async putFile(key: string, filePath: string, _info: BlobInfo): Promise<void> {
    const target = this.pathOf(key);
    await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    const temp = `${target}.${randomBytes(6).toString('hex')}.part`;
    try {
      await fs.rename(filePath, temp);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
      await fs.copyFile(filePath, temp);
    }
    await fs.chmod(temp, 0o600);
    await fs.rename(temp, target);
  }

  async open(key: string): Promise<Readable> {
    const handle = await fs.open(this.pathOf(key), 'r');
    return handle.createReadStream({ autoClose: true });
  }

  async delete(key: string): Promise<void> {
    await fs.rm(this.pathOf(key), { force: true });
  }
}
