/**
 * Starts the real app in-process for a test file: real PostgreSQL (the database prepared by the
 * global setup), responses validated against the contract, a manual clock, and operator helpers
 * that mint credentials through the operator API itself.
 */
import request from 'supertest';
import type { Express } from 'express';
import { createApp } from '../../app.js';
import { loadConfig, type Config } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import { ManualClock } from '../../lib/clock.js';
import { openDatabase, type Database } from '../../lib/db/database.js';
import { MemoryCounterStore, type CounterStore } from '../../lib/counters.js';
import { loadAdminContract, loadPublicContract } from '../../lib/contracts.js';
import { randomToken } from '../../lib/secrets.js';
import type { Contract } from '../../lib/contract.js';
import { SecretBox, deriveKey } from '../../lib/crypto-box.js';
import { randomBytes } from 'node:crypto';
import { testDatabaseUrl } from './db.js';
import type { AddressInfo, Server } from 'node:net';
import { CloudApiClient } from '../../channel/cloud-api.js';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../simulator/app.js';
import { simulatedChannelProvisioner } from '../../lib/simulated-channel.js';
import { startWebhookDelivery, type WebhookDelivery, type WebhookDeliveryOptions } from '../../jobs/webhook-delivery.js';
import { CredentialCache } from '../../lib/credential-cache.js';

function listen(app: { listen(port: number, host: string, cb: () => void): Server }): Promise<Server> {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server));
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    (server as any).closeAllConnections?.();
    server.close(() => resolve());
  });
}

export interface TestApp {
  app: Express;
  /** Set with the simulator option. */
  sim?: { simulator: Simulator; url: string };
  /** The app's own URL, when it listens (simulator option). */
  baseUrl?: string;
  db: Database;
  clock: ManualClock;
  config: Config;
  adminToken: string;
  admin: OperatorClient;
  secretBox: SecretBox;
  /** The running webhook delivery (webhooks option). */
  readonly webhooks?: WebhookDelivery;
  /** Stops the webhook delivery (as a crash or deploy would) and starts a new one on the same database. */
  restartWebhooks(): Promise<WebhookDelivery>;
  /** Stops the webhook delivery without starting another. */
  stopWebhooks(): Promise<void>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  config?: Partial<Config>;
  counters?: CounterStore;
  clock?: ManualClock;
  /** A contract and handlers of the test's own, to exercise the shared policy mechanism. */
  contract?: Contract;
  handlers?: Record<string, unknown>;
  /** Start the Cloud API simulator and connect new projects to it (the app then listens on a port for its callbacks). */
  simulator?: boolean | SimulatorOptions;
  /**
   * Run webhook delivery (fan-out, attempts, retries on the job runner) against the test database,
   * with a schedule shortened by TEST_WEBHOOK_OPTIONS (ratios kept); an object overrides it.
   */
  webhooks?: boolean | WebhookDeliveryOptions;
  /** A migrated database of the test's own (a private server it may stop); default: the run's database. */
  databaseUrl?: string;
}

/** Webhook delivery in tests: the spec's schedule scaled by 0.02 (100, 200, 400, 800 ms), no jitter, quick scans. */
export const TEST_WEBHOOK_OPTIONS = {
  policy: { scale: 0.02, jitter: 0, attemptTimeoutMs: 2000, leaseMs: 5000, overdueGraceMs: 1500, sweepEveryMs: 500, retryBucketMs: 5, stopGraceMs: 500 },
  processEveryMs: 100,
  lockLifetimeMs: 1000,
  poolSize: 6,
} satisfies WebhookDeliveryOptions;

export async function startTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  // Tests make many failed authentications from one address: throttling only where a test asks for it.
  const config = { ...loadConfig({}), rateLimitPerMinute: 1000, authFailuresPerMinute: 1_000_000, ...opts.config };
  const db = await openDatabase(opts.databaseUrl ?? testDatabaseUrl(), {
    max: 5,
    acquireTimeoutMs: config.databaseAcquireTimeoutMs,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
  });
  const clock = opts.clock ?? new ManualClock(new Date('2026-03-01T12:00:00Z'));
  const counters = opts.counters ?? new MemoryCounterStore();
  const adminToken = 'adm_test_' + randomToken(24);
  const masterKey = randomBytes(32);
  const logger = createLogger({ silent: !process.env.TEST_LOG, level: 'debug' });
  const stops: Array<() => Promise<void>> = [];
  let sim: TestApp['sim'];
  if (opts.simulator) {
    const simulator = createSimulator({ clock, ...(typeof opts.simulator === 'object' ? opts.simulator : {}) });
    const server = await listen(simulator.app);
    stops.push(async () => {
      await simulator.close();
      await closeServer(server);
    });
    sim = { simulator, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  }
  const channel = new CloudApiClient({ baseUrl: sim?.url ?? 'http://127.0.0.1:9', version: 'v21.0', timeoutMs: 2000 });
  const secretBox = new SecretBox(masterKey);
  let callbackBase = '';
  const credentialCache = new CredentialCache(db.pool, { ttlMs: config.credentialCacheTtlMs, enabled: config.credentialCacheTtlMs > 0 });
  await credentialCache.start();
  stops.push(() => credentialCache.stop());
  const app = createApp({
    channel,
    credentialCache,
    provisionChannel: sim ? (projectId) => simulatedChannelProvisioner({ db, secretBox, logger }, sim!.url, callbackBase)(projectId) : undefined,
    config,
    db,
    clock,
    logger,
    counters,
    contract: opts.contract ?? loadPublicContract(),
    handlers: opts.handlers,
    adminContract: loadAdminContract(),
    secretBox,
    cursorSecret: deriveKey(masterKey, 'cursor'),
    validateResponses: true,
    adminToken,
  });
  let baseUrl: string | undefined;
  if (sim) {
    const server = await listen(app);
    baseUrl = callbackBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    stops.unshift(() => closeServer(server));
  }
  const webhookOptions: WebhookDeliveryOptions | undefined = opts.webhooks
    ? { ...TEST_WEBHOOK_OPTIONS, ...(typeof opts.webhooks === 'object' ? opts.webhooks : {}),
        policy: { ...TEST_WEBHOOK_OPTIONS.policy, ...(typeof opts.webhooks === 'object' ? opts.webhooks.policy : {}) } }
    : undefined;
  let webhooks: WebhookDelivery | undefined;
  const stopWebhooks = async () => {
    const running = webhooks;
    webhooks = undefined;
    await running?.stop();
  };
  const startWebhooks = async () => (webhooks = await startWebhookDelivery({ db, clock, logger, secretBox, config }, webhookOptions ?? TEST_WEBHOOK_OPTIONS));
  if (webhookOptions) await startWebhooks();
  stops.unshift(stopWebhooks);
  return {
    app, db, clock, config, adminToken, sim, baseUrl, secretBox,
    get webhooks() {
      return webhooks;
    },
    stopWebhooks,
    restartWebhooks: async () => {
      await stopWebhooks();
      return startWebhooks();
    },
    admin: new OperatorClient(app, adminToken),
    close: async () => {
      for (const stop of stops) await stop();
      await channel.close?.();
      await counters.close();
      await db.close();
    },
  };
}

/** The operator API, as a test would call it; every call must succeed. */
export class OperatorClient {
  constructor(private readonly app: Express, private readonly token: string) {}

  async call(method: 'get' | 'post' | 'patch' | 'put' | 'delete', path: string, body?: object): Promise<any> {
    const req = request(this.app)[method](path).set('Authorization', `Bearer ${this.token}`);
    const res = body === undefined ? await req : await req.send(body);
    if (res.status >= 300) throw new Error(`${method.toUpperCase()} ${path} → ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data;
  }

  async project(name = 'Test project', extra: object = {}): Promise<{ id: string; name: string }> {
    return (await this.call('post', '/admin/projects', { name, ...extra })).project;
  }

  /** A project API key; returns the key record and its secret. */
  async key(projectId: string, scopes: string[], mode: 'live' | 'test' = 'live'): Promise<{ id: string; secret: string }> {
    const data = await this.call('post', `/admin/projects/${projectId}/keys`, { name: 'test key', scopes, mode });
    return { id: data.key.id, secret: data.secret };
  }

  /** A connection with the given projects attached (the first is the default) and a token. */
  async connection(attach: Array<{ projectId: string; scopes: string[]; isDefault?: boolean }>, expiresInSeconds = 3600) {
    const { connection } = await this.call('post', '/admin/connections', { name: 'agent' });
    for (const a of attach) {
      await this.call('put', `/admin/connections/${connection.id}/projects/${a.projectId}`, {
        scopes: a.scopes,
        ...(a.isDefault !== undefined ? { is_default: a.isDefault } : {}),
      });
    }
    const data = await this.call('post', `/admin/connections/${connection.id}/tokens`, { expires_in_seconds: expiresInSeconds });
    return { connectionId: connection.id as string, tokenId: data.token.id as string, secret: data.secret as string };
  }
}
