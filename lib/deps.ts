/**
 * What the app is built from. Tests build it with their own clock, counters and database;
 * server.ts builds it from the configuration.
 */
import type { Config } from './config.js';
import type { Clock } from './clock.js';
import type { Logger } from './logger.js';
import type { Database } from './db/database.js';
import type { CounterStore } from './counters.js';
import type { Contract } from './contract.js';
import type { SecretBox } from './crypto-box.js';
import type { CredentialCache } from './credential-cache.js';
import type { CloudApiClient } from '../channel/cloud-api.js';
import type { BlobStore } from './storage/blob-store.js';

export interface AppDeps {
  config: Config;
  db: Database;
  clock: Clock;
  logger: Logger;
  counters: CounterStore;
  /** The public /v1 contract (openapi.yaml). */
  contract: Contract;
  /** The operator contract (admin-openapi.yaml). */
  adminContract: Contract;
  /** The WhatsApp Cloud API (or the simulator). */
  channel: CloudApiClient;
  /** Resolved credentials, invalidated on every operator write (lib/credential-cache.ts). */
  credentialCache?: CredentialCache;
  /** Encrypts channel tokens and signing secrets at rest. */
  secretBox: SecretBox;
  /** Signs paging cursors, so a cursor the service did not issue is refused. */
  cursorSecret: Buffer;
  /** Connects a new project to a channel (the embedded default's simulator); optional. */
  provisionChannel?: (projectId: string) => Promise<void>;
  /** Media asset bytes; default: the local file system under DATA_DIR/media (lib/storage/blob-store.ts). */
  blobStore?: BlobStore;
  /** Validate responses against the contract (on in tests). */
  validateResponses: boolean;
}
