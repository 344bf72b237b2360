/**
 * The envelope and request ids on every kind of response (spec items 6 and 7), and the published
 * description at GET /v1/openapi.json.
 */
import { RELEASED, judge, readChangelog, readYaml } from '../../scripts/contract/policy.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { createHttpServer } from '../../http/http-server.js';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';

let t: TestApp;
let key: string;
beforeAll(async () => {
  t = await startTestApp({ config: { publicBaseUrl: 'https://api.example.test' } });
  const p = await t.admin.project();
  key = (await t.admin.key(p.id, ['contacts:read'])).secret;
});
afterAll(async () => {
  await t.close();
});

function expectFailure(res: request.Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({ success: false, error: expect.objectContaining({ code, message: expect.any(String) }), request_id: expect.any(String) });
  expect(res.headers['x-request-id']).toBe(res.body.request_id);
}

describe('request ids', () => {
  it('When the caller sends a sane X-Request-Id, then it is adopted on success and failure', async () => {
    const ok = await request(t.app).get('/v1/ping').set('Authorization', `Bearer ${key}`).set('X-Request-Id', 'abc-123_x.y:z');
    expect(ok.headers['x-request-id']).toBe('abc-123_x.y:z');
    const fail = await request(t.app).get('/v1/ping').set('X-Request-Id', 'abc-123_x.y:z');
    expect(fail.body.request_id).toBe('abc-123_x.y:z');
  });

  it.each([['x'.repeat(129)], ['has space'], ['<script>'], ['ünïcode']])('When X-Request-Id is not sane (%s), then a fresh id is used', async (id) => {
    const res = await request(t.app).get('/v1/ping').set('X-Request-Id', id);
    expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
    expect(res.body.request_id).toBe(res.headers['x-request-id']);
  });

  it('When no id is sent, then each response gets a distinct one', async () => {
    const a = await request(t.app).get('/v1/openapi.json');
    const b = await request(t.app).get('/v1/openapi.json');
    expect(a.headers['x-request-id']).toMatch(/^req_/);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });
});

describe('failures outside the operations', () => {
  it('When the path is unknown under /v1, then 404 not_found in the envelope', async () => {
    expectFailure(await request(t.app).get('/v1/nope').set('Authorization', `Bearer ${key}`), 404, 'not_found');
  });

  it('When the path is unknown outside /v1, then 404 not_found in the envelope', async () => {
    expectFailure(await request(t.app).get('/'), 404, 'not_found');
    expectFailure(await request(t.app).post('/whatever').send({ a: 1 }), 404, 'not_found');
  });

  it('When the method is wrong, then 405 method_not_allowed with Allow', async () => {
    const res = await request(t.app).delete('/v1/ping').set('Authorization', `Bearer ${key}`);
    expectFailure(res, 405, 'method_not_allowed');
    expect(res.headers['allow']).toMatch(/GET/);
  });

  it('When the URL and headers exceed 16 KB, or the request is not HTTP, then Node\'s parser refusal is 400 bad_request in the envelope', async () => {
    const server = createHttpServer(t.app).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const long = await request(base).get(`/v1/tables/t/rows?schema=${'x'.repeat(20_000)}`).set('Authorization', `Bearer ${key}`);
      expectFailure(long, 400, 'bad_request');
      expect(long.body.error.message).toMatch(/16 KB/);
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = connect((server.address() as AddressInfo).port, '127.0.0.1', () => socket.write('GET /v1/ping HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'));
        let text = '';
        socket.on('data', (d) => (text += d));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      expect(raw).toMatch(/^HTTP\/1\.1 400 /);
      const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
      expect(body).toEqual({ success: false, error: { code: 'bad_request', message: expect.any(String) }, request_id: expect.stringMatching(/^req_/) });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('When the operator API is called without its token, then 401 in the envelope', async () => {
    expectFailure(await request(t.app).get('/admin/projects'), 401, 'api_key_required');
    expectFailure(await request(t.app).get('/admin/projects').set('Authorization', 'Bearer wrong'), 401, 'invalid_token');
    expectFailure(await request(t.app).get('/admin/projects').set('Authorization', `Bearer ${key}`), 401, 'invalid_token');
  });
});

describe('GET /v1/openapi.json', () => {
  it('When fetched without credential, then the OpenAPI 3.1 document is served as JSON, without /admin', async () => {
    const res = await request(t.app).get('/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(res.body.openapi).toBe('3.1.0');
    // The versioning policy (README): the served version is the released snapshot's, or a legal step from it with a CHANGELOG.md entry.
    expect(judge(readYaml(RELEASED), res.body, readChangelog()).problems).toEqual([]);
    expect(res.body.servers[0].url).toBe('https://api.example.test');
    expect(Object.keys(res.body.paths).every((p) => p.startsWith('/v1/'))).toBe(true);
    expect(JSON.stringify(res.body)).not.toContain('/admin');
  });

  it('When read, then every operation has an operationId, a tag, a summary and x-required-scopes', async () => {
    const res = await request(t.app).get('/v1/openapi.json');
    for (const item of Object.values<any>(res.body.paths)) {
      for (const op of Object.values<any>(item)) {
        if (typeof op !== 'object' || !op.responses) continue;
        expect(op).toMatchObject({ operationId: expect.any(String), summary: expect.any(String) });
        expect(op.tags.length).toBeGreaterThan(0);
        expect(Array.isArray(op['x-required-scopes'])).toBe(true);
      }
    }
  });

  it('When the error codes of the spec are read from the contract, then every one is there', async () => {
    const res = await request(t.app).get('/v1/openapi.json');
    const codes: string[] = res.body.components.schemas.ErrorCode.enum;
    for (const code of ['bad_request', 'invalid_request', 'invalid_json', 'invalid_id', 'invalid_cursor', 'invalid_idempotency_key',
      'invalid_project_header', 'project_required', 'invalid_template', 'null_filter_value', 'unknown_column', 'api_key_required',
      'invalid_api_key', 'invalid_token', 'insufficient_scope', 'project_inactive', 'project_not_attached', 'no_project_access',
      'protected_file', 'platform_table_forbidden', 'table_not_found', 'outside_24h_window', 'template_exists', 'idempotency_in_progress',
      'idempotency_key_mismatch', 'file_too_large', 'rate_limited', 'quota_exceeded', 'upstream_auth_error', 'build_failed',
      'flow_generation_failed', 'flow_update_failed', 'server_error', 'INVALID_STATE', 'PROJECT_NOT_FOUND', 'SEGMENT_NOT_FOUND',
      'MEDIA_EXPIRED', 'BROADCAST_NOT_FOUND']) {
      expect(codes).toContain(code);
    }
  });

  it('When the operator description is fetched, then it is served separately', async () => {
    const res = await request(t.app).get('/admin/openapi.json');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.paths).every((p) => p.startsWith('/admin/'))).toBe(true);
  });
});

describe('one table of codes', () => {
  it('When the code table of the service and the contract are compared, then they list the same codes', async () => {
    const { ERROR_STATUS } = await import('../../lib/platform/errors.js');
    const res = await request(t.app).get('/v1/openapi.json');
    expect([...res.body.components.schemas.ErrorCode.enum].sort()).toEqual(Object.keys(ERROR_STATUS).sort());
  });
});
