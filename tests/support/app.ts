/**
 * Starts the real app in-process for a test file, built by the same composition root as the
 * service (services.ts): real PostgreSQL (the database prepared by the global setup), responses
 * validated against the contract, a manual clock, and operator helpers that mint credentials
 * through the operator API itself.
 */
import type { HandlerMap } from '../../http/handler-types.js';
import request from 'supertest';
import { afterAll, beforeAll } from '@jest/globals';
import type { Express } from 'express';
import { loadConfig, type Config } from '../../lib/platform/config.js';
import { createLogger } from '../../lib/platform/logger.js';
import { ManualClock } from '../../lib/platform/clock.js';
import type { Database } from '../../lib/platform/db/database.js';
import { MemoryCounterStore, type CounterStore } from '../../lib/platform/counters.js';
import { randomToken } from '../../lib/platform/secrets.js';
import type { Contract } from '../../http/contract.js';
import type { SecretBox } from '../../lib/platform/crypto-box.js';
import { randomBytes } from 'node:crypto';
import { testDatabaseUrl } from './db.js';
import type { AddressInfo, Server } from 'node:net';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../simulator/app.js';
import type { WebhookDelivery, WebhookDeliveryOptions } from '../../jobs/webhook-delivery.js';
import type { JobsOptions } from '../../jobs/index.js';
import { createServices, type Services } from '../../services.js';
import { BotRuntime } from '../../lib/bot/runtime.js';
import type { SandboxLimits } from '../../lib/sandbox/sandbox.js';
import type { Logger } from '../../lib/platform/logger.js';
import type { ChannelPort } from '../../lib/channel-port/port.js';
import { recordViolations } from './response-violations.js';
import { closeSandboxSupervisor } from '../../lib/sandbox/supervisor.js';
import { configureBuilds } from '../../lib/deploy/build.js';
import type { BuildProcessKeeper } from '../../lib/deploy/build-process.js';
import { shippedContracts } from './contracts.js';

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
  /** What the composition root built (readiness, drain, metrics, jobs). */
  services: Services;
  /** The bot runtime (bot option). */
  bot?: BotRuntime;
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
  /** A channel port's adapter of the test's own (tests/support/memory-channel.ts) instead of the Cloud API client. */
  channel?: ChannelPort;
  /** Adapters of other channel kinds, by kind (tests/support/text-only-channel.ts), beside the default one. */
  channels?: Readonly<Record<string, ChannelPort>>;
  /** Start the Cloud API simulator and connect new projects to it (the app then listens on a port for its callbacks). */
  simulator?: boolean | SimulatorOptions;
  /**
   * Run webhook delivery (fan-out, attempts, retries on the job runner) against the test database,
   * with a schedule shortened by TEST_WEBHOOK_OPTIONS (ratios kept); an object overrides it.
   */
  webhooks?: boolean | WebhookDeliveryOptions;
  /** Run deployed bots on inbound messages (lib/bot/runtime.ts); an object sets the sandbox limits. */
  bot?: boolean | SandboxLimits;
  /** A migrated database of the test's own (a private server it may stop); default: the run's database. */
  databaseUrl?: string;
  /** A logger of the test's own (default: silent unless TEST_LOG). */
  logger?: Logger;
  /**
   * The validator's own response validation (answers 500 on a violation); default false, production's
   * setting. Every response is checked against the contract anyway (responseCheckSample 1, a violation
   * fails the test), and the validator's check compiled the whole contract again per operation.
   */
  validateResponses?: boolean;
}

/** Webhook delivery in tests: the spec's schedule scaled by 0.02 (100, 200, 400, 800 ms), no jitter, quick scans. */
export const TEST_WEBHOOK_OPTIONS = {
  policy: { scale: 0.02, jitter: 0, attemptTimeoutMs: 2000, leaseMs: 5000, overdueGraceMs: 1500, sweepEveryMs: 500, retryBucketMs: 5, stopGraceMs: 500 },
} satisfies WebhookDeliveryOptions;

/** The job runner in tests: quick scans, short locks (so a stopped runner's timers end soon), a small pool. */
// Broadcast tests drive engines of their own (tests/support/broadcasts.ts).
export const TEST_JOB_OPTIONS = { processEveryMs: 100, lockLifetimeMs: 1000, poolSize: 6, broadcasts: false } satisfies JobsOptions;

/**
 * A test file's app: started before its tests, closed after them. `started` receives it (the file keeps
 * it in a variable of its own: \`let t: TestApp; useTestApp({}, (app) => { t = app; });\`).
 */
export function useTestApp(opts: TestAppOptions, started: (t: TestApp) => void): void {
  let app: TestApp | undefined;
  beforeAll(async () => {
    app = await startTestApp(opts);
    started(app);
  });
  afterAll(async () => {
    await app?.close();
  });
}

/** A new project of `t` and a key of it with `scopes`. */
export async function keyedProject(t: TestApp, scopes: string[]): Promise<{ projectId: string; key: string }> {
  const project = await t.admin.project();
  return { projectId: project.id, key: (await t.admin.key(project.id, scopes)).secret };
}

/** A new project `name` of `t` and an agent connection to it with `scopes` (its bearer secret). */
export async function connectedProject(t: TestApp, name: string, scopes: string[]): Promise<{ projectId: string; secret: string }> {
  const project = await t.admin.project(name);
  return { projectId: project.id, secret: (await t.admin.connection([{ projectId: project.id, scopes }])).secret };
}

/** This file's apps not yet closed. */
let openApps = 0;

export async function startTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  // Tests make many failed authentications (and OAuth registrations) from one address: throttling only where a test asks for it.
  // Every response is checked against the contract (a violation fails the test: response-violations.ts).
  const config = {
    ...loadConfig({}),
    rateLimitPerMinute: 1000,
    authFailuresPerMinute: 1_000_000,
    oauthRegistrationsPerHour: 1_000_000,
    oauthRegistrationBytesPerDay: 1_000_000_000,
    responseCheckSample: 1,
    // Schedules run on the times their expressions name, unless a test asks for the spread (tests/bot/bot-schedules.test.ts).
    botScheduleSpreadSeconds: 0,
    ...opts.config,
  };
  const clock = opts.clock ?? new ManualClock(new Date('2026-03-01T12:00:00Z'));
  const counters = opts.counters ?? new MemoryCounterStore();
  const adminToken = 'adm_test_' + randomToken(24);
  const logger = opts.logger ?? createLogger({ silent: !process.env.TEST_LOG, level: 'debug' });
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
  // The worker's build process outlives a file's apps (tests/support/test-environment.js): the next file skips its 2 s start.
  const keeper = (globalThis as { buildProcessKeeper?: BuildProcessKeeper }).buildProcessKeeper;
  if (keeper) configureBuilds({ keeper });
  const bot = opts.bot ? new BotRuntime(typeof opts.bot === 'object' ? opts.bot : undefined) : undefined;
  const services = await createServices({
    bot,
    config,
    logger,
    databaseUrl: opts.databaseUrl ?? testDatabaseUrl(),
    masterKey: randomBytes(32),
    adminToken,
    graphBaseUrl: sim?.url ?? 'http://127.0.0.1:9',
    simulatorUrl: sim?.url,
    clock,
    counters,
    poolMax: 5,
    channelVersion: opts.config?.graphApiVersion ?? 'v26.0',
    channelTimeoutMs: 2000,
    ...(opts.channel ? { channel: opts.channel } : {}),
    ...(opts.channels ? { channels: opts.channels } : {}),
    ...shippedContracts(),
    ...(opts.contract ? { contract: opts.contract } : {}),
    // Tests pass loosely typed stand-ins; the app's own maps are typed per operation.
    handlers: opts.handlers as HandlerMap | undefined,
    validateResponses: opts.validateResponses ?? false,
    // The shipped contracts are checked against the OpenAPI schema once (tests/contract/contract-schema.test.ts); a test's own is checked here.
    checkContracts: !!opts.contract,
    onResponseViolation: recordViolations,
    processMetrics: false,
    jobs: false,
  });
  const { app, db } = services;
  let baseUrl: string | undefined;
  if (sim) {
    const server = await listen(app);
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    services.setCallbackBase(baseUrl);
    stops.unshift(() => closeServer(server));
  }
  const webhookOptions: WebhookDeliveryOptions = {
    ...TEST_WEBHOOK_OPTIONS,
    ...(typeof opts.webhooks === 'object' ? opts.webhooks : {}),
    policy: { ...TEST_WEBHOOK_OPTIONS.policy, ...(typeof opts.webhooks === 'object' ? opts.webhooks.policy : {}) },
  };
  const startJobs = async () => (await services.startJobs({ ...TEST_JOB_OPTIONS, webhooks: webhookOptions })).webhooks;
  if (opts.webhooks) await startJobs();
  openApps++;
  let closed = false;
  return {
    app, db, clock, config, adminToken, sim, baseUrl, secretBox: services.deps.secretBox, services, bot,
    get webhooks() {
      return services.jobs?.webhooks;
    },
    stopWebhooks: () => services.stopJobs(),
    restartWebhooks: startJobs,
    admin: new OperatorClient(app, adminToken),
    close: async () => {
      if (closed) return;
      closed = true;
      for (const stop of stops) await stop();
      await services.close();
      // The sandbox processes are the process's, shared by a file's apps: ended with the last of them.
      if (--openApps === 0) closeSandboxSupervisor();
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
