/**
 * Contract fuzzing (issue #24 item 4): every operation of openapi.yaml gets requests generated
 * from its own JSON Schemas (path, query and header parameters, the body), valid and invalid
 * (wrong types, missing required fields, undeclared fields, bounds crossed, malformed JSON, no or a
 * wrong credential, a credential without the scopes, empty and boundary-length path ids), against
 * the real app on the real database.
 * Every answer must be below 500, in the envelope, and conform to the contract (every response of
 * a test app is validated: tests/support/response-violations.ts).
 *
 * Seeded and bounded in time: FUZZ_SEED=<n> replays a run (the seed is printed on failure), FUZZ_MS
 * sets the total budget (default 60 s; at least 1 s per operation), FUZZ_OPS=op1,op2 narrows it to some operations. Ids from
 * successful answers are fed back into path parameters, so the fuzzer also reaches existing
 * resources, not only 404s.
 *
 * @shared Its budget is time, not a bound: on a loaded machine it tries fewer requests, each still checked.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc, { type Arbitrary } from 'fast-check';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { createHttpServer } from '../../http/http-server.js';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { takeViolations, violationsMessage } from '../support/response-violations.js';
import { SchemaArbitraries } from '../support/schema-arbitrary.js';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const BUDGET_MS = Number(process.env.FUZZ_MS ?? 60_000);
const ONLY = process.env.FUZZ_OPS ? new Set(process.env.FUZZ_OPS.split(',')) : undefined;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

let t: TestApp;
/** The app behind the service's own HTTP server (server.ts), so parser refusals (a URL over 16 KB) are answered as in production. */
let server: Server;
let base: string;
let project: { id: string };
let fullKey: string;
let noScopeKey: string;
let arbs: SchemaArbitraries;
/** Ids seen in successful answers, reused as path parameters. */
const pool: string[] = [];

interface Operation {
  operationId: string;
  method: (typeof METHODS)[number];
  path: string;
  parameters: Array<{ name: string; in: string; required?: boolean; schema: Record<string, any> }>;
  body?: { contentType: string; schema: Record<string, any>; required: boolean };
  secured: boolean;
}

interface Case {
  auth: 'full' | 'none' | 'garbage' | 'noScope';
  path: Record<string, { pool?: number; value?: unknown }>;
  query: Record<string, unknown>;
  headers: Record<string, unknown>;
  body: { kind: 'valid' | 'invalid' | 'malformed' | 'none'; value?: unknown };
}

function operations(document: Record<string, any>): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Record<string, any>>(document.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const byKey = new Map<string, any>();
      for (const p of [...(item.parameters ?? []), ...(op.parameters ?? [])].map((x) => arbs.resolve(x))) byKey.set(`${p.in}:${p.name}`, p);
      const content = arbs.resolve(op.requestBody)?.content as Record<string, any> | undefined;
      const contentType = content ? Object.keys(content)[0] : undefined;
      out.push({
        operationId: op.operationId,
        method,
        path,
        parameters: [...byKey.values()].map((p) => ({ ...p, schema: p.schema ?? { type: 'string' } })),
        body: contentType ? { contentType, schema: content![contentType].schema ?? {}, required: arbs.resolve(op.requestBody).required === true } : undefined,
        secured: !(Array.isArray(op.security) && op.security.length === 0),
      });
    }
  }
  // Creating operations first: their ids feed the others' path parameters.
  return out.sort((a, b) => Number(a.path.includes('{')) - Number(b.path.includes('{')) || Number(a.method !== 'post') - Number(b.method !== 'post'));
}

function caseOf(op: Operation): Arbitrary<Case> {
  const param = (p: Operation['parameters'][number], valid: boolean) => (valid ? arbs.valid(p.schema) : arbs.invalid(p.schema));
  const pathArb = fc.record(
    Object.fromEntries(
      op.parameters.filter((p) => p.in === 'path').map((p) => [
        p.name,
        fc.oneof(
          { weight: 3, arbitrary: fc.nat().map((i) => ({ pool: i })) },
          { weight: 2, arbitrary: param(p, true).map((value) => ({ value })) },
          { weight: 1, arbitrary: param(p, false).map((value) => ({ value })) },
          // The empty id and the length bounds (0, the shortest, the longest, one past it).
          { weight: 1, arbitrary: fc.constantFrom(...arbs.pathBoundaries(p.schema)).map((value) => ({ value })) },
        ),
      ]),
    ),
  ) as Arbitrary<Case['path']>;
  const optionalRecord = (where: string) =>
    fc.record(
      Object.fromEntries(
        op.parameters.filter((p) => p.in === where).map((p) => [p.name, fc.oneof({ weight: 3, arbitrary: param(p, true) }, { weight: 1, arbitrary: param(p, false) })]),
      ),
      { requiredKeys: [] },
    ) as Arbitrary<Record<string, unknown>>;
  const body: Arbitrary<Case['body']> = op.body
    ? fc.oneof(
        { weight: 4, arbitrary: arbs.valid(op.body.schema).map((value) => ({ kind: 'valid' as const, value })) },
        { weight: 3, arbitrary: arbs.invalid(op.body.schema).map((value) => ({ kind: 'invalid' as const, value })) },
        { weight: 1, arbitrary: fc.constantFrom('{"a":', '[1,2', 'not json', '{"x":1}}').map((value) => ({ kind: 'malformed' as const, value })) },
        { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
      )
    : fc.oneof({ weight: 5, arbitrary: fc.constant({ kind: 'none' as const }) }, { weight: 1, arbitrary: fc.constant({ kind: 'malformed' as const, value: '{"unexpected": true}' }) });
  return fc.record({
    auth: fc.constantFrom<Case['auth']>('full', 'full', 'full', 'full', 'full', 'none', 'garbage', 'noScope'),
    path: pathArb,
    query: optionalRecord('query'),
    headers: optionalRecord('header'),
    body,
  });
}

function asText(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

async function send(op: Operation, c: Case): Promise<request.Response> {
  let url = op.path;
  for (const [name, p] of Object.entries(c.path)) {
    const value = p.pool !== undefined ? (pool.length ? pool[p.pool % pool.length] : 'none') : asText(p.value);
    url = url.replace(`{${name}}`, encodeURIComponent(value));
  }
  const query = Object.entries(c.query).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(asText(v))}`).join('&');
  // A request that hangs is a defect too: it fails the run rather than the suite's time limit.
  let req = request(base)[op.method](query ? `${url}?${query}` : url).timeout(15_000);
  for (const [k, v] of Object.entries(c.headers)) {
    if (k.toLowerCase() === 'authorization') continue;
    // Headers are bytes on the wire: a value Node refuses to send is a client-side error, not a case.
    const text = asText(v).replace(/[^\x20-\x7e]/g, '');
    if (text) req = req.set(k, text);
  }
  if (c.auth === 'full') req = req.set('Authorization', `Bearer ${fullKey}`);
  if (c.auth === 'noScope') req = req.set('Authorization', `Bearer ${noScopeKey}`);
  if (c.auth === 'garbage') req = req.set('Authorization', 'Bearer pk_live_notARealKey0000000000');
  if (c.body.kind === 'malformed') return req.set('Content-Type', 'application/json').send(String(c.body.value));
  if (c.body.kind === 'none' || !op.body) return req;
  if (op.body.contentType === 'multipart/form-data') {
    const fields = (c.body.value && typeof c.body.value === 'object' && !Array.isArray(c.body.value) ? c.body.value : {}) as Record<string, unknown>;
    for (const [k, v] of Object.entries(fields)) {
      if (k === 'file') req = req.attach('file', Buffer.from(asText(v)), { filename: 'f.txt', contentType: 'text/plain' });
      else req = req.field(k, asText(v));
    }
    return req;
  }
  if (op.body.contentType === 'text/csv') return req.set('Content-Type', 'text/csv').send(c.body.kind === 'valid' ? `phone,name\n+1415555${String(asText(c.body.value).length).padStart(4, '0')},x\n` : asText(c.body.value));
  return req.set('Content-Type', op.body.contentType).send(JSON.stringify(c.body.value ?? null));
}

function collectIds(v: unknown): void {
  if (Array.isArray(v)) return v.forEach(collectIds);
  if (!v || typeof v !== 'object') return;
  for (const [k, x] of Object.entries(v)) {
    if ((k === 'id' || k.endsWith('_id') || k === 'name' || k === 'slug') && (typeof x === 'string' || typeof x === 'number') && pool.length < 500 && !pool.includes(String(x))) pool.push(String(x));
    else collectIds(x);
  }
}

beforeAll(async () => {
  t = await startTestApp({ simulator: true, config: { rateLimitPerMinute: 1_000_000 } });
  arbs = new SchemaArbitraries(t.services.deps.contract.document);
  project = await t.admin.project('fuzz');
  const scopes: string[] = t.services.deps.contract.document.components.schemas.Scope.enum;
  fullKey = (await t.admin.key(project.id, scopes)).secret;
  noScopeKey = (await t.admin.key(project.id, ['events:template_status'])).secret; // a scope no operation asks for
  server = createHttpServer(t.app).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  if (server) await new Promise((resolve) => server.close(resolve));
  await t?.close();
});

describe('contract fuzzing', () => {
  it('When every operation receives generated valid and invalid requests, then no answer is a 5xx and every answer conforms to the contract', async () => {
    const ops = operations(t.services.deps.contract.document).filter((o) => !ONLY || ONLY.has(o.operationId));
    expect(ops.length).toBeGreaterThan(0);
    const perOpMs = Math.max(1000, Math.floor(BUDGET_MS / ops.length));
    const counts: Record<string, Record<string, number>> = {};
    const started = Date.now();
    const failures: string[] = [];
    for (const op of ops) {
      counts[op.operationId] = {};
      if (process.env.FUZZ_VERBOSE) process.stderr.write(`fuzz ${op.operationId} at ${Date.now() - started} ms\n`);
      const seed = (SEED ^ hash(op.operationId)) >>> 0;
      const property = fc.asyncProperty(caseOf(op), async (c) => {
        const res = await send(op, c);
        const violations = takeViolations();
        const where = `${op.operationId} (${op.method.toUpperCase()} ${op.path}) answered ${res.status}`;
        if (violations.length) throw new Error(`${where}: ${violationsMessage(violations)}`);
        if (res.status >= 500) throw new Error(`${where}: ${JSON.stringify(res.body).slice(0, 500)}`);
        // An empty path id is this operation's 400 invalid_id once authenticated: never another
        // operation's answer (the collection's list) nor a routing 404/405.
        const emptyId = Object.values(c.path).some((p) => p.pool === undefined && asText(p.value) === '');
        if (emptyId && c.auth !== 'none' && c.auth !== 'garbage' && !(res.status === 400 && res.body?.error?.code === 'invalid_id')) {
          throw new Error(`${where} for an empty path id (expected 400 invalid_id): ${asText(res.body).slice(0, 300)}`);
        }
        if (emptyId && c.auth === 'none' && res.status !== 401) throw new Error(`${where} for an empty path id without a credential (expected 401)`);
        if (res.status >= 400) {
          const ok = res.body?.success === false && typeof res.body.error?.code === 'string' && typeof res.body.request_id === 'string';
          if (!ok) throw new Error(`${where} outside the envelope: ${asText(res.body).slice(0, 300)}`);
        } else if (res.status < 300) collectIds(res.body?.data);
        counts[op.operationId][res.status] = (counts[op.operationId][res.status] ?? 0) + 1;
      });
      const result = await fc.check(property, { seed, numRuns: 400, interruptAfterTimeLimit: perOpMs, markInterruptAsFailure: false, endOnFailure: true });
      // An interruption by the time budget is not a failure; a counterexample is.
      if (result.failed && result.counterexample !== null) {
        failures.push(
          `Contract fuzzing failed on ${op.operationId}: replay with FUZZ_SEED=${SEED} FUZZ_OPS=${op.operationId}` +
            ` (fast-check seed ${result.seed}, path ${result.counterexamplePath})\n${fc.defaultReportMessage(result).slice(0, 4000)}\n${String((result.errorInstance as Error)?.message ?? result.errorInstance).slice(0, 3000)}`,
        );
      }
    }
    // All failing operations at once, each with the line that replays it.
    if (failures.length) throw new Error(failures.join('\n\n'));
    const total = Object.values(counts).reduce((n, c) => n + Object.values(c).reduce((a, b) => a + b, 0), 0);
    const byClass: Record<string, number> = {};
    for (const c of Object.values(counts)) for (const [s, n] of Object.entries(c)) byClass[`${s[0]}xx`] = (byClass[`${s[0]}xx`] ?? 0) + n;
    console.log(`contract fuzz: seed ${SEED}, ${ops.length} operations, ${total} requests in ${Math.round((Date.now() - started) / 1000)} s, ${JSON.stringify(byClass)}, ${pool.length} ids reused`);
    // Every operation was reached, and some requests went through (not only refusals); a replay
    // narrowed by FUZZ_OPS may hold only operations that cannot succeed on an empty project.
    for (const op of ops) expect(Object.keys(counts[op.operationId]).length).toBeGreaterThan(0);
    if (!ONLY) expect(byClass['2xx'] ?? 0).toBeGreaterThan(0);
  }, BUDGET_MS + 120_000);
});

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}
