/**
 * Path parameters at their bounds, on every operation of both contracts (issue #34 item 3): an empty
 * id is the operation's own 400 `invalid_id` after authentication (401 before it), never another
 * operation's answer (`GET /v1/segments/` is not the list) nor a routing 404/405; the shortest and
 * the longest id the schema allows are answered within the contract (no 5xx, no undeclared status);
 * one character past the longest is 400 `invalid_id`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { SchemaArbitraries } from '../support/schema-arbitrary.js';
import { takeViolations, violationsMessage } from '../support/response-violations.js';

let t: TestApp;
let key: string;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

beforeAll(async () => {
  t = await startTestApp({ simulator: true });
  const project = await t.admin.project('path params');
  key = (await t.admin.key(project.id, t.services.deps.contract.document.components.schemas.Scope.enum)).secret;
}, 60_000);
afterAll(async () => {
  await t?.close();
});

interface PathOp {
  operationId: string;
  method: (typeof METHODS)[number];
  path: string;
  params: Array<{ name: string; bounds: string[] }>;
  /** The first media type of the request body, if the operation takes one. */
  contentType?: string;
}

function pathOps(document: Record<string, any>): PathOp[] {
  const arbs = new SchemaArbitraries(document);
  const out: PathOp[] = [];
  for (const [path, item] of Object.entries<Record<string, any>>(document.paths)) {
    if (!path.includes('{')) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => arbs.resolve(p)).filter((p) => p.in === 'path');
      const content = arbs.resolve(op.requestBody)?.content as Record<string, unknown> | undefined;
      out.push({ operationId: op.operationId, method, path, params: params.map((p) => ({ name: p.name, bounds: arbs.pathBoundaries(p.schema) })), contentType: content ? Object.keys(content)[0] : undefined });
    }
  }
  return out;
}

const urlOf = (op: PathOp, pick: (name: string) => string) => op.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(pick(name)));

async function call(op: PathOp, url: string, auth: string | undefined) {
  let req = request(t.app)[op.method](url);
  if (auth) req = req.set('Authorization', `Bearer ${auth}`);
  // A body of the operation's media type (empty of meaning): the id, not a missing body, is the case.
  if (op.contentType === 'application/json') return req.set('Content-Type', 'application/json').send('{}');
  if (op.contentType === 'multipart/form-data') return req.field('x', 'y');
  if (op.contentType) return req.set('Content-Type', op.contentType).send('x');
  return req;
}

describe.each([
  ['openapi.yaml', () => t.services.deps.contract.document, () => key],
  ['admin-openapi.yaml', () => t.services.deps.adminContract.document, () => t.adminToken],
])('path parameters of %s', (_name, documentOf, credentialOf) => {
  it('When a path id is empty, the shortest, the longest or one past the longest, then the operation answers within the contract', async () => {
    const problems: string[] = [];
    let checked = 0;
    for (const op of pathOps(documentOf())) {
      for (const target of op.params) {
        const [empty, shortest, longest, tooLong] = target.bounds;
        const others = (name: string) => op.params.find((p) => p.name === name)!.bounds[1];
        for (const [label, value] of [['empty', empty], ['shortest', shortest], ['longest', longest], ['one past the longest', tooLong]] as const) {
          const url = urlOf(op, (name) => (name === target.name ? value : others(name)));
          const res = await call(op, url, credentialOf());
          checked++;
          const where = `${op.operationId} ${op.method.toUpperCase()} ${url.slice(0, 120)} (${target.name} ${label}, ${value.length} characters) answered ${res.status} ${res.body?.error?.code ?? ''}`;
          const violations = takeViolations();
          if (violations.length) problems.push(`${where}: ${violationsMessage(violations)}`);
          if (res.status >= 500 || res.status === 405) problems.push(where);
          if (res.status >= 400 && res.body?.success !== false) problems.push(`${where}: outside the envelope`);
          if ((label === 'empty' || label === 'one past the longest') && !(res.status === 400 && res.body?.error?.code === 'invalid_id')) {
            // A file path past its length is the file rules' own refusal.
            if (!(target.name === 'path' && res.status === 400 && res.body?.error?.code === 'invalid_path')) problems.push(`${where}: expected 400 invalid_id`);
          }
          if (label === 'empty') {
            const anonymous = await call(op, url, undefined);
            takeViolations();
            if (anonymous.status !== 401) problems.push(`${where}: without a credential ${anonymous.status} (expected 401)`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(40);
  }, 120_000);
});

describe('the empty id is not another operation', () => {
  it('When GET /v1/segments/ is asked, then 400 invalid_id, not the segment list; PATCH and DELETE too, not 405', async () => {
    for (const method of ['get', 'patch', 'delete'] as const) {
      const res = await request(t.app)[method]('/v1/segments/').set('Authorization', `Bearer ${key}`);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_id');
    }
    const list = await request(t.app).get('/v1/segments').set('Authorization', `Bearer ${key}`);
    expect(list.status).toBe(200);
  });

  it('When /v1/contact-imports//rows is asked, then 401 without a credential and 400 invalid_id with one (not a 404 before authentication)', async () => {
    expect((await request(t.app).get('/v1/contact-imports//rows')).status).toBe(401);
    const res = await request(t.app).get('/v1/contact-imports//rows').set('Authorization', `Bearer ${key}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_id', details: { fields: [{ field: 'path.id', message: 'must not be empty' }] } });
    expect((await request(t.app).get('/v1/contact-imports/').set('Authorization', `Bearer ${key}`)).body.error.code).toBe('invalid_id');
  });

  it('When an admin path id is empty, then 400 invalid_id after the admin token, not the collection', async () => {
    const res = await request(t.app).get('/admin/projects/').set('Authorization', `Bearer ${t.adminToken}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_id');
    expect((await request(t.app).get('/admin/projects//keys')).status).toBe(401);
  });
});
