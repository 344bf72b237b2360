/**
 * Credential caches are invalidated by the domain after its write commits (lib/access/
 * credential-cache.ts, credentialsChanged), not by the HTTP method of an operator request: a
 * revocation made by the domain without any HTTP request holds from the key's next request, and
 * an operator write that changes no credential leaves the cache warm.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { revokeKey } from '../../lib/access/keys.js';
import { revokeRuntimeToken } from '../../lib/access/runtime-tokens.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

const ping = (secret: string) => request(t.app).get('/v1/ping').set('Authorization', `Bearer ${secret}`);
/** Statements the credential lookup ran (by its prepared statement's name), counted on the app's pool. */
function countKeyLookups(): { n: number; stop: () => void } {
  const pool = t.db.pool as unknown as { query: (...args: unknown[]) => Promise<unknown> };
  const query = pool.query;
  const counter = { n: 0, stop: () => (pool.query = query) };
  pool.query = function (this: unknown, config: unknown, ...rest: unknown[]) {
    if ((config as { name?: string } | null)?.name === 'credential-key') counter.n++;
    return query.call(this, config, ...rest);
  } as typeof pool.query;
  return counter;
}

describe('credential cache invalidation', () => {
  it('When the domain revokes a key with no HTTP request involved, then the key is refused on its next request', async () => {
    const project = await t.admin.project('changes 1');
    const key = await t.admin.key(project.id, ['messages:send']);
    expect((await ping(key.secret)).status).toBe(200); // cached now
    await revokeKey(t.services.deps, key.id);
    const res = await ping(key.secret);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('invalid_api_key');
  });

  it('When a runtime token is revoked by the domain, then the runtime API refuses it on its next request', async () => {
    const project = await t.admin.project('changes 2');
    const { secret, token } = await t.admin.call('post', `/admin/projects/${project.id}/runtime-tokens`, {});
    const emit = () => request(t.app).post('/runtime/events').set('Authorization', `Bearer ${secret}`).send({ name: 'order.paid', payload: { order_id: 'A-1' } });
    expect((await emit()).status).toBeLessThan(300);
    await revokeRuntimeToken(t.services.deps, token.id);
    expect((await emit()).status).toBe(401);
    expect(await revokeRuntimeToken(t.services.deps, 'rtk_missing')).toBeNull();
  });

  it('When an operator write changes no credential (a broadcast throughput), then the cache stays warm: the next request does not look the key up again', async () => {
    const project = await t.admin.project('changes 3');
    const key = await t.admin.key(project.id, ['messages:send']);
    expect((await ping(key.secret)).status).toBe(200);
    const counter = countKeyLookups();
    try {
      const res = await t.admin.call('put', `/admin/projects/${project.id}/broadcast-throughput`, { messages_per_second: 40 });
      expect(res).toBeDefined();
      expect((await ping(key.secret)).status).toBe(200);
      expect(counter.n).toBe(0);
      // A credential write does clear it: the next request reads the key again.
      await t.admin.call('patch', `/admin/keys/${key.id}`, { name: 'renamed' });
      expect((await ping(key.secret)).status).toBe(200);
      expect(counter.n).toBe(1);
    } finally {
      counter.stop();
    }
  });
});
