/**
 * The shared policy mechanism on writes and scoped operations (a fixture contract drives the real
 * pipeline): project_required, scopes from x-required-scopes checked on the selected project only,
 * validation errors with field details, injected exceptions, and contract-breaking responses.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import request from 'supertest';
import { loadContract } from '../../http/contract.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { takeViolations } from '../support/response-violations.js';

let t: TestApp;
beforeAll(async () => {
  const contract = loadContract(fileURLToPath(new URL('../fixtures/policy-contract.yaml', import.meta.url)), { requireScopes: true });
  // The validator's own response validation, which turns a violation into a 500 (tested below).
  t = await startTestApp({
    validateResponses: true,
    contract,
    handlers: {
      readThings: async (req: any) => ({ data: { projectId: req.auth.project.id } }),
      writeThing: async (req: any) => ({ status: 201, data: { projectId: req.auth.project.id, name: req.body.name } }),
      readThing: async (req: any) => ({ data: { id: req.params.id } }),
      boom: async () => {
        throw new Error('secret internal detail at /srv/app.ts:42');
      },
      badResponse: async () => ({ data: { n: 'not a number' } }),
    },
  });
});
afterAll(async () => {
  await t.close();
});

const bearer = (s: string) => ({ Authorization: `Bearer ${s}` });

describe('X-Service-Project on writes', () => {
  it('When a token with 2+ projects writes without the header, then 400 project_required', async () => {
    const a = await t.admin.project();
    const b = await t.admin.project();
    const tok = await t.admin.connection([
      { projectId: a.id, scopes: ['contacts:write'] },
      { projectId: b.id, scopes: ['contacts:write'] },
    ]);
    const res = await request(t.app).post('/v1/things').set(bearer(tok.secret)).send({ name: 'x' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('project_required');
    const named = await request(t.app).post('/v1/things').set(bearer(tok.secret)).set('X-Service-Project', b.id).send({ name: 'x' });
    expect(named.status).toBe(201);
    expect(named.body.data.projectId).toBe(b.id);
  });

  it('When a token with one project writes without the header, then that project is used', async () => {
    const a = await t.admin.project();
    const tok = await t.admin.connection([{ projectId: a.id, scopes: ['contacts:write'] }]);
    const res = await request(t.app).post('/v1/things').set(bearer(tok.secret)).send({ name: 'x' });
    expect(res.status).toBe(201);
    expect(res.body.data.projectId).toBe(a.id);
  });
});

describe('scopes from x-required-scopes', () => {
  it('When the key lacks the operation\'s scope, then 403 insufficient_scope naming it', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    expect((await request(t.app).get('/v1/things').set(bearer(key.secret))).status).toBe(200);
    const res = await request(t.app).post('/v1/things').set(bearer(key.secret)).send({ name: 'x' });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'insufficient_scope', details: { required: ['contacts:write'], missing: ['contacts:write'] } });
  });

  it('When the scope is held on another attached project only, then it does not pool', async () => {
    const a = await t.admin.project();
    const b = await t.admin.project();
    const tok = await t.admin.connection([
      { projectId: a.id, scopes: ['contacts:write'] },
      { projectId: b.id, scopes: ['contacts:read'] },
    ]);
    const res = await request(t.app).post('/v1/things').set(bearer(tok.secret)).set('X-Service-Project', b.id).send({ name: 'x' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
  });

  it('When scopes are lacking and the body is also invalid, then the scope error comes first and nothing is parsed', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    const res = await request(t.app).post('/v1/things').set(bearer(key.secret)).set('Content-Type', 'application/json').send('{not json');
    expect(res.body.error.code).toBe('insufficient_scope');
  });
});

describe('validation errors', () => {
  let key: string;
  beforeAll(async () => {
    const p = await t.admin.project();
    key = (await t.admin.key(p.id, ['contacts:read', 'contacts:write'])).secret;
  });

  it('When the body is not JSON, then 400 invalid_json', async () => {
    const res = await request(t.app).post('/v1/things').set(bearer(key)).set('Content-Type', 'application/json').send('{"name": ');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_json');
    expect(res.body.request_id).toBe(res.headers['x-request-id']);
  });

  it('When the body breaks the schema, then 400 invalid_request with the offending fields', async () => {
    const res = await request(t.app).post('/v1/things').set(bearer(key)).send({ name: '', count: -1, extra: true });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    const fields = res.body.error.details.fields.map((f: any) => f.field).sort();
    expect(fields).toEqual(expect.arrayContaining(['count', 'name']));
    expect(JSON.stringify(res.body.error.details)).toContain('extra');
  });

  it('When the body is missing, then 400 and not a 500', async () => {
    const res = await request(t.app).post('/v1/things').set(bearer(key));
    expect([400, 415]).toContain(res.status);
    expect(res.body.success).toBe(false);
  });

  it('When the body is too large, then 413 payload_too_large in the envelope', async () => {
    const res = await request(t.app).post('/v1/things').set(bearer(key)).send({ name: 'x'.repeat(2_000_000) });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
    expect(res.body.request_id).toBe(res.headers['x-request-id']);
  });

  it('When a path id is malformed, then 400 invalid_id', async () => {
    const res = await request(t.app).get('/v1/things/abc').set(bearer(key));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_id');
  });

  it('When an unknown query parameter is sent, then 400 invalid_request naming it', async () => {
    const res = await request(t.app).get('/v1/things?bogus=1').set(bearer(key));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(JSON.stringify(res.body.error.details)).toContain('bogus');
  });
});

describe('unexpected failures', () => {
  it('When a handler throws, then 500 server_error without internal detail', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    const res = await request(t.app).get('/v1/boom').set(bearer(key.secret)).set('X-Request-Id', 'trace-boom-1');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      success: false,
      error: { code: 'server_error', message: expect.any(String) },
      request_id: 'trace-boom-1',
    });
    expect(JSON.stringify(res.body)).not.toMatch(/secret internal|app\.ts|at /);
    expect(res.headers['x-request-id']).toBe('trace-boom-1');
  });

  it('When a handler answers outside its contract, then the response validation turns it into a failure', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    const res = await request(t.app).get('/v1/bad-response').set(bearer(key.secret));
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('server_error');
    // The test's own failure would name the operation, the path and the rule (taken here: provoked on purpose).
    expect(takeViolations()).toEqual([expect.objectContaining({ operationId: 'badResponse', path: '/data/n', rule: 'type' })]);
  });
});
