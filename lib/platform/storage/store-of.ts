/**
 * Picks the app's blob store (one per configuration, so every caller shares it): BLOB_STORE=local
 * (the default, DATA_DIR/media: one instance) or postgres (table blob_chunks: every instance of a
 * deployment reads what another stored; docs/deploy.md).
 */
import path from 'node:path';
import type pg from 'pg';
import type { Config } from '../config.js';
import type { BlobStore } from './blob-store.js';
import { LocalFsBlobStore } from './local-fs.js';
import { PostgresBlobStore } from './postgres.js';

/** The app's blob store: `deps.blobStore` when given, else the configured one. */
const defaults = new WeakMap<object, BlobStore>();

export function blobStoreOf(deps: { config: Config; blobStore?: BlobStore; db?: { pool: pg.Pool } }): BlobStore {
  if (deps.blobStore) return deps.blobStore;
  let store = defaults.get(deps.config);
  if (!store) {
    if (deps.config.blobStore === 'postgres') {
      if (!deps.db) throw new Error('BLOB_STORE=postgres needs the database pool');
      store = new PostgresBlobStore(deps.db.pool);
    } else {
      store = new LocalFsBlobStore(path.join(deps.config.dataDir, 'media'));
    }
    defaults.set(deps.config, store);
  }
  return store;
}
