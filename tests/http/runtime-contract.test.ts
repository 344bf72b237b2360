/** The runtime API is described by its own contract (runtime-openapi.yaml) and served by it, like /v1 and /admin. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('runtime contract', () => {
  it('is published without a token at GET /runtime/openapi.json, with the events operation', async () => {
    const res = await request(t.app).get('/runtime/openapi.json').expect(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.paths['/runtime/events'].post.operationId).toBe('emitCustomEvent');
    expect(res.body.servers[0].description).toBe('This deployment');
  });

  it('routes by it: an unknown runtime path is 404, a wrong method 405, a body that is not JSON 415, all in the envelope', async () => {
    const project = await t.admin.project('Runtime contract');
    const runtime = (await t.admin.call('post', `/admin/projects/${project.id}/runtime-tokens`)).secret as string;
    const missing = await request(t.app).post('/runtime/nothing').set('Authorization', `Bearer ${runtime}`).send({});
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ success: false, error: { code: 'not_found' } });
    const wrongMethod = await request(t.app).get('/runtime/events').set('Authorization', `Bearer ${runtime}`);
    expect(wrongMethod.status).toBe(405);
    const text = await request(t.app).post('/runtime/events').set('Authorization', `Bearer ${runtime}`).set('Content-Type', 'text/plain').send('name=x');
    expect(text.status).toBe(415);
    expect(text.body).toMatchObject({ success: false, error: { code: 'unsupported_media_type' } });
    const ok = await request(t.app).post('/runtime/events').set('Authorization', `Bearer ${runtime}`).send({ name: 'order.paid', payload: { n: 1 } });
    expect(ok.status).toBe(202);
    expect(ok.body.data.event).toEqual({ id: expect.any(String), name: 'order.paid', created_at: expect.any(String) });
  });
});
