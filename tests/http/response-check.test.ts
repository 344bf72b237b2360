/**
 * Closed responses and the response check: a field that leaks out of a handler, or a required one
 * it forgets, is caught. In tests the failure names the operation, the JSON path and the rule; in
 * production a sample of responses is checked, a violation is logged and the answer is unchanged.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import request from 'supertest';
import winston from 'winston';
import { Writable } from 'node:stream';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { handlers } from '../../handlers/index.js';
import { shippedContract } from '../support/contracts.js';
import { loadConfig } from '../../lib/platform/config.js';
import type { Logger } from '../../lib/platform/logger.js';
import { ResponseChecker, responseCheck, type ResponseViolation } from '../../http/contract-checks/response-check.js';
import { takeViolations, violationsMessage } from '../support/response-violations.js';
import { startTestApp, type TestApp } from '../support/app.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const apps: TestApp[] = [];
afterAll(async () => {
  for (const a of apps) await a.close();
});

/** A ping handler that leaks an internal field next to the declared ones. */
const leakyPing = async (req: any) => ({ data: { ok: true, projectId: req.auth.project.id, scopes: [], internal_note: 'leaked' } });
/** A ping handler that forgets the required `projectId`. */
const forgetfulPing = async () => ({ data: { ok: true, scopes: [] } });

/** The first log line with this message (winston hands lines to its transports asynchronously). */
async function logged(lines: Array<Record<string, unknown>>, message: string): Promise<Record<string, unknown> | undefined> {
  for (let i = 0; i < 50; i++) {
    const line = lines.find((l) => l.message === message);
    if (line) return line;
    await new Promise((r) => setTimeout(r, 10));
  }
  return undefined;
}

function capturingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    objectMode: true,
    write(info: Record<string, unknown>, _enc, done) {
      lines.push(info);
      done();
    },
  });
  return { logger: winston.createLogger({ level: 'debug', transports: [new winston.transports.Stream({ stream })] }), lines };
}

async function appWith(ping: unknown, opts: Parameters<typeof startTestApp>[0] = {}) {
  const t = await startTestApp({ ...opts, handlers: { ...handlers, ping } });
  apps.push(t);
  const project = await t.admin.project('response check');
  const key = (await t.admin.key(project.id, ['contacts:read'])).secret;
  return { t, key };
}

describe('the shipped contracts close the objects the service sends', () => {
  it('When a body carries a property the schema does not declare, then the checker refuses it (additionalProperties)', () => {
    const checker = new ResponseChecker(shippedContract('public'));
    expect(checker.check('ping', 200, { success: true, data: { ok: true, projectId: 'p', scopes: [] } })).toEqual([]);
    const [v] = checker.check('ping', 200, { success: true, data: { ok: true, projectId: 'p', scopes: [], extra: 1 } });
    expect(v).toMatchObject({ operationId: 'ping', operation: 'GET /v1/ping', status: 200, path: '/data/extra', rule: 'additionalProperties' });
  });

  it('When an error envelope carries an extra member, then it is refused too', () => {
    const checker = new ResponseChecker(shippedContract('public'));
    const envelope = { success: false, error: { code: 'not_found', message: 'x' }, request_id: 'r' };
    expect(checker.check('getContact', 404, envelope)).toEqual([]);
    expect(checker.check('getContact', 404, { ...envelope, stack: 'at …' })[0]).toMatchObject({ path: '/stack', rule: 'additionalProperties' });
  });

  it('When a webhook payload composed with allOf carries an extra member, then unevaluatedProperties refuses it', () => {
    const contract = shippedContract('public');
    const checker = new ResponseChecker(contract);
    const ajvCheck = (body: unknown) => (checker as any).ajv.validate({ $ref: 'contract:root#/components/schemas/MessageStatusDelivery' }, body);
    const delivery = { id: 'dlv_1', event: 'message.status', created_at: '2026-03-01T12:00:00Z', webhook_id: 'whk_1', data: { message_id: 'wamid.1', status: 'sent' } };
    expect(ajvCheck(delivery)).toBe(true);
    expect(ajvCheck({ ...delivery, secret: 'whsec_x' })).toBe(false);
  });

  it('When the status is not declared by the operation, then that is a violation of rule status', () => {
    const checker = new ResponseChecker(shippedContract('public'));
    expect(checker.check('ping', 418, {})[0]).toMatchObject({ rule: 'status', status: 418 });
  });
});

describe('in tests, a response that breaks the contract fails the test that caused it', () => {
  it('When a handler leaks a field, then the recorded violation names the operation, the JSON path and the rule', async () => {
    const { t, key } = await appWith(leakyPing);
    const res = await request(t.app).get('/v1/ping').set('Authorization', `Bearer ${key}`);
    // The check never changes an answer (the validator's own 500 is off, as in production): it records it.
    expect(res.status).toBe(200);
    expect(res.body.data.internal_note).toBeDefined();
    const violations = takeViolations();
    expect(violations).toHaveLength(1);
    expect(violationsMessage(violations)).toContain('ping (GET /v1/ping) answered 200 with a body that breaks the contract at /data/internal_note: must NOT have additional properties [rule: additionalProperties]');
  });

  it('When a handler forgets a required field, then the violation names it with rule required', async () => {
    const { t, key } = await appWith(forgetfulPing);
    await request(t.app).get('/v1/ping').set('Authorization', `Bearer ${key}`);
    const [v] = takeViolations();
    expect(v).toMatchObject({ operationId: 'ping', path: '/data/projectId', rule: 'required' });
  });

  it('When a test file gets such a response, then jest reports the operation, path and rule in that test\'s failure', async () => {
    const jest = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js');
    const config = {
      rootDir: root,
      testEnvironment: 'node',
      extensionsToTreatAsEsm: ['.ts'],
      moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
      transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } }] },
      testMatch: ['<rootDir>/tests/fixtures/response-check/leak.fixture.ts'],
      setupFilesAfterEnv: ['<rootDir>/tests/support/response-violations-hook.ts'],
    };
    const run = promisify(execFile)(process.execPath, ['--experimental-vm-modules', jest, '--config', JSON.stringify(config), '--ci', '--colors=false'], { cwd: root });
    const failure = await run.then(() => undefined, (e: { stderr: string }) => e);
    expect(failure).toBeDefined();
    expect(failure!.stderr).toContain('When a handler leaks a field, then this test fails');
    expect(failure!.stderr).toContain('ping (GET /v1/ping) answered 200 with a body that breaks the contract at /data/internal_note');
    expect(failure!.stderr).toContain('[rule: additionalProperties]');
  }, 60_000);
});

describe('in production, RESPONSE_CHECK_SAMPLE checks a fraction of responses and only logs', () => {
  it('When a sampled response leaks a field, then the answer is sent unchanged and the violation is logged with operationId, path and rule', async () => {
    const { logger, lines } = capturingLogger();
    const { t, key } = await appWith(leakyPing, { validateResponses: false, logger, config: { responseCheckSample: 1 } });
    const res = await request(t.app).get('/v1/ping').set('Authorization', `Bearer ${key}`);
    expect(res.status).toBe(200);
    expect(res.body.data.internal_note).toBe('leaked');
    expect(takeViolations()).toHaveLength(1);
    expect(await logged(lines, 'response violates the contract')).toMatchObject({ level: 'warn', operationId: 'ping', status: 200, path: '/data/internal_note', rule: 'additionalProperties', problem: 'must NOT have additional properties' });
  });

  it('When the sample is 0 (the default), then nothing is checked or logged', async () => {
    expect(loadConfig({}).responseCheckSample).toBe(0);
    const { logger, lines } = capturingLogger();
    const { t, key } = await appWith(leakyPing, { validateResponses: false, logger, config: { responseCheckSample: 0 } });
    const res = await request(t.app).get('/v1/ping').set('Authorization', `Bearer ${key}`);
    expect(res.status).toBe(200);
    expect(takeViolations()).toEqual([]);
    expect(await logged(lines, 'response violates the contract')).toBeUndefined();
  });

  it('When the sample is 0.25, then about that fraction of responses is checked', async () => {
    const contract = shippedContract('public');
    const seen: ResponseViolation[][] = [];
    let i = 0;
    const app = express();
    app.use((req, _res, next) => {
      (req as any).openapi = { schema: { operationId: 'ping' } };
      next();
    });
    const { logger } = capturingLogger();
    // A deterministic "random": 0, 0.1, …, 0.9, so exactly the draws below 0.25 are checked.
    app.use(responseCheck({ contract, sample: 0.25, logger, pathPrefix: '/', onViolation: (v) => seen.push(v), random: () => (i++ % 10) / 10 }));
    app.get('/v1/ping', (_req, res) => void res.json({ leaked: true }));
    for (let n = 0; n < 20; n++) expect((await request(app).get('/v1/ping')).body).toEqual({ leaked: true });
    expect(seen).toHaveLength(6);
  });

  it('When the checker itself throws, then the answer still goes out and the failure is logged', async () => {
    const { logger, lines } = capturingLogger();
    const app = express();
    app.use((req, _res, next) => {
      (req as any).openapi = { schema: { operationId: 'ping' } };
      next();
    });
    const broken = { ...shippedContract('public'), operations: { get: () => { throw new Error('boom'); } } } as any;
    app.use(responseCheck({ contract: broken, sample: 1, logger, pathPrefix: '/' }));
    app.get('/v1/ping', (_req, res) => void res.json({ fine: true }));
    const res = await request(app).get('/v1/ping');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ fine: true });
    expect(await logged(lines, 'response check failed')).toMatchObject({ error: 'boom' });
  });

  it.each(['-0.1', '1.5', 'half'])('When RESPONSE_CHECK_SAMPLE is %s, then start-up fails naming the variable', (value) => {
    expect(() => loadConfig({ RESPONSE_CHECK_SAMPLE: value })).toThrow(/RESPONSE_CHECK_SAMPLE must be a number from 0 to 1/);
  });
});
