/**
 * What the domain is built from (the HTTP edge adds its contracts: http/app-deps.ts). Tests build it with their own clock, counters and database;
 * server.ts builds it from the configuration.
 */
import type { Config } from './platform/config.js';
import type { Clock } from './platform/clock.js';
import type { Logger } from './platform/logger.js';
import type { Database } from './platform/db/database.js';
import type { CounterStore } from './platform/counters.js';
import type { SecretBox } from './platform/crypto-box.js';
import type { CredentialCache } from './access/credential-cache.js';
import type { ChannelPort } from './channel-port/port.js';
import type { Metrics } from './platform/metrics.js';
import type { BlobStore } from './platform/storage/blob-store.js';
import type { BotHook } from './bot/types.js';
import type { MergeMoves } from './conversations/identity.js';

export interface Deps {
  config: Config;
  db: Database;
  clock: Clock;
  logger: Logger;
  counters: CounterStore;
  /** The messaging channel (lib/channel-port/port.ts): the WhatsApp Cloud API's adapter, or the simulator behind it, or a test's. */
  channel: ChannelPort;
  /** Adapters of other channel kinds, by kind (a project's channel settings name its kind; docs/channels.md). */
  channels?: Readonly<Record<string, ChannelPort>>;
  /** Resolved credentials, invalidated on every operator write (lib/access/credential-cache.ts). */
  credentialCache?: CredentialCache;
  /** Encrypts channel tokens and signing secrets at rest. */
  secretBox: SecretBox;
  /** Signs paging cursors, so a cursor the service did not issue is refused. */
  cursorSecret: Buffer;
  /** Connects a new project to a channel (the embedded default's simulator); optional. */
  provisionChannel?: (projectId: string) => Promise<void>;
  /** Media asset bytes; default: the local file system under DATA_DIR/media (lib/platform/storage/blob-store.ts). */
  blobStore?: BlobStore;
  /** Prometheus metrics of this instance (lib/platform/metrics.ts); absent where nobody scrapes. */
  metrics?: Metrics;
  /** The production bot runtime (lib/bot/runtime.ts); without it inbound messages reach no bot. */
  bot?: BotHook;
  /** When two contacts merge, the owners of messages and broadcast recipients move their rows (services.ts composes it). */
  contactMerge: MergeMoves;
}
