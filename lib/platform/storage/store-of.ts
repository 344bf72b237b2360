/** Picks the app's blob store (one default per configuration, so every caller shares it). */
import path from 'node:path';
import type { Config } from '../config.js';
import type { BlobStore } from './blob-store.js';
import { LocalFsBlobStore } from './local-fs.js';

/** The app's blob store: `deps.blobStore` when given, else the local file system under DATA_DIR/media. */
const defaults = new WeakMap<object, BlobStore>();

export function blobStoreOf(deps: { config: Config; blobStore?: BlobStore }): BlobStore {
  if (deps.blobStore) return deps.blobStore;
  let store = defaults.get(deps.config);
  if (!store) defaults.set(deps.config, (store = new LocalFsBlobStore(path.join(deps.config.dataDir, 'media'))));
  return store;
}
