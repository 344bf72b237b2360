/**
 * Segments and broadcasts through /v1 and the operator API: the filter language, live counts,
 * POST /v1/broadcasts (always pending_approval, template and variables checked, MARKETING only
 * to opted-in contacts, the pre-flight report), the reads, approval freezing the audience, and
 * cancel. Bad inputs get their exact 4xx.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApp, type TestApp } from '../support/app.js';
import { api, projectWithKey, seedContacts, template } from '../support/broadcasts.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t.close();
});

async function setup() {
  const { project, key } = await projectWithKey(t);
  await template(t, project.id, 'promo', 'Hi {{1}}, {{2}} off today');
  await template(t, project.id, 'notice', 'Your account was updated', 'UTILITY');
  await seedContacts(t, project.id, [
    { phone: '14155550001', name: 'Ada', tags: ['vip'], attributes: { city: 'Lisbon', visits: 5 }, optedIn: true },
    { phone: '14155550002', name: 'Bo', tags: ['vip'], attributes: { city: 'Porto', visits: 1 }, optedIn: false },
    { phone: '14155550003', name: null, tags: ['vip', 'new'], attributes: { city: 'Lisbon' }, optedIn: true },
    { phone: '14155550004', name: 'Cy', tags: [], optedIn: true, optedOut: true },
    { phone: '123', name: 'Bad number', tags: ['vip'], optedIn: true },
  ]);
  return { project, key, call: api(t, key) };
}

const vip = { match: 'all', conditions: [{ field: 'tags', op: 'has', value: 'vip' }] };

describe('segments', () => {
  it('When a segment is created, read, updated and deleted, then its live count follows the filter and contacts', async () => {
    const { call, project } = await setup();
    const created = await call.post('/v1/segments', { name: 'VIPs', filter: vip });
    expect(created.status).toBe(201);
    expect(created.body.data.segment).toMatchObject({ name: 'VIPs', contact_count: 4, project_id: project.id });
    const id = created.body.data.segment.id;
    await seedContacts(t, project.id, [{ phone: '14155550005', tags: ['vip'] }]);
    expect((await call.get(`/v1/segments/${id}`)).body.data.segment.contact_count).toBe(5);
    const lisbon = { match: 'all', conditions: [{ field: 'attributes.city', op: 'eq', value: 'Lisbon' }, { field: 'attributes.visits', op: 'gte', value: 2 }] };
    const updated = await call.patch(`/v1/segments/${id}`, { filter: lisbon });
    expect(updated.body.data.segment).toMatchObject({ name: 'VIPs', contact_count: 1 });
    const list = await call.get('/v1/segments?limit=10');
    expect(list.body.data).toMatchObject({ total: 1, limit: 10, offset: 0 });
    expect((await call.delete(`/v1/segments/${id}`)).body.data).toEqual({ deleted: true });
    expect((await call.get(`/v1/segments/${id}`)).body.error.code).toBe('SEGMENT_NOT_FOUND');
  });

  it.each([
    [{ match: 'all', conditions: [{ field: 'colour', op: 'eq', value: 'x' }] }, 'filter.conditions[0].field'],
    [{ match: 'all', conditions: [{ field: 'tags', op: 'gt', value: 1 }] }, 'filter.conditions[0].op'],
    [{ match: 'all', conditions: [{ field: 'attributes.visits', op: 'gt', value: 'ten' }] }, 'filter.conditions[0].value'],
    [{ match: 'all', conditions: [{ match: 'any', conditions: [{ match: 'any', conditions: [{ match: 'all', conditions: [] }] }] }] }, 'filter.conditions[0].conditions[0].conditions[0]'],
  ])('When the filter is malformed (%j), then 400 invalid_request names %s', async (filter, path) => {
    const { call } = await setup();
    const res = await call.post('/v1/segments', { name: 'x', filter });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details.fields[0].field).toBe(path);
  });

  it('When another project reads the segment, or the id is malformed, then 404 SEGMENT_NOT_FOUND and 400 invalid_id', async () => {
    const a = await setup();
    const b = await setup();
    const id = (await a.call.post('/v1/segments', { name: 'VIPs', filter: vip })).body.data.segment.id;
    expect((await b.call.get(`/v1/segments/${id}`)).body.error.code).toBe('SEGMENT_NOT_FOUND');
    expect((await b.call.get('/v1/segments/not-a-uuid')).body.error.code).toBe('invalid_id');
  });
});

describe('createBroadcast', () => {
  it('When a MARKETING campaign is created, then it is pending_approval with a pre-flight report that excludes the not-opted-in, opted-out and invalid', async () => {
    const { call, project } = await setup();
    const res = await call.post('/v1/broadcasts', {
      name: 'Spring', template_name: 'promo', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } },
      template_variables: { body: ['{{contact.name|there}}', '20%'] },
    });
    expect(res.status).toBe(201);
    const b = res.body.data.broadcast;
    expect(b).toMatchObject({
      status: 'pending_approval', category: 'MARKETING', counts: null, recipient_count: 2, project_id: project.id,
      wave_size: null, wave_scheduled_at: null, wave_scheduled_count: null, retarget_parent_id: null, retarget_count: 0,
      created_by: expect.stringMatching(/^key_/), creator_name: 'test key', started_at: null,
    });
    expect(b.preflight).toMatchObject({ eligible: 2, excluded: { not_opted_in: 1, opted_out: 1, invalid_phone: 1, duplicate: 0 }, messages_per_second: 72 });
    expect(b.preflight.estimated_duration_seconds).toBe(1);
    const got = await call.get(`/v1/broadcasts/${b.id}`);
    expect(got.body.data.broadcast).toMatchObject({ id: b.id, status: 'pending_approval', recipient_count: 2 });
    const list = await call.get('/v1/broadcasts?status=pending_approval');
    expect(list.body.data).toMatchObject({ total: 1, limit: 50, offset: 0 });
    expect(list.body.data.broadcasts[0].id).toBe(b.id);
  });

  it('When a contact hit the per-user marketing limit (131049) in the last 24 hours, then a MARKETING campaign excludes them; a day later it does not', async () => {
    const { call, project } = await setup();
    const { rows } = await t.db.pool.query(`SELECT id FROM contacts WHERE project_id = $1 AND phone = '14155550001'`, [project.id]);
    const cv = await t.db.pool.query(
      `INSERT INTO conversations (project_id, contact_id, last_message_at, created_at, updated_at) VALUES ($1, $2, $3, $3, $3) RETURNING id`,
      [project.id, rows[0].id, t.clock.now()],
    );
    await t.db.pool.query(
      `INSERT INTO messages (project_id, conversation_id, wamid, direction, type, content, status, error, sent_at, status_at)
       VALUES ($1, $2, 'wamid.limit1', 'outbound', 'template', '{}', 'failed', '{"code":131049,"title":"ecosystem"}', $3, $3)`,
      [project.id, cv.rows[0].id, new Date(t.clock.now().getTime() - 3600_000)],
    );
    const body = { name: 'x', template_name: 'promo', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } }, template_variables: { body: ['a', 'b'] } };
    const res = await call.post('/v1/broadcasts', body);
    expect(res.body.data.broadcast.preflight).toMatchObject({ eligible: 1, excluded: { recent_marketing_limit: 1 } });
    t.clock.advance(24 * 3600_000);
    const later = await call.get(`/v1/broadcasts/${res.body.data.broadcast.id}`);
    expect(later.body.data.broadcast.preflight).toMatchObject({ eligible: 2, excluded: { recent_marketing_limit: 0 } });
    expect(later.body.data.broadcast.recipient_count).toBe(2);
  });

  it('When a UTILITY campaign targets a segment, then not-opted-in contacts are eligible but opted-out ones are not', async () => {
    const { call } = await setup();
    const seg = (await call.post('/v1/segments', { name: 'VIPs', filter: vip })).body.data.segment.id;
    const res = await call.post('/v1/broadcasts', { name: 'Notice', template_name: 'notice', template_language: 'en_US', audience: { segment_id: seg } });
    expect(res.status).toBe(201);
    expect(res.body.data.broadcast).toMatchObject({ category: 'UTILITY', recipient_count: 3, audience: { segment_id: seg, filter: vip } });
    expect(res.body.data.broadcast.preflight.excluded).toMatchObject({ invalid_phone: 1, not_opted_in: 0 });
  });

  it('When a variable names an attribute some contacts lack and has no fallback, then they are excluded as missing_variable', async () => {
    const { call } = await setup();
    const res = await call.post('/v1/broadcasts', {
      name: 'x', template_name: 'promo', template_language: 'en_US', category: 'UTILITY',
      audience: { filter: { match: 'all', conditions: [] } }, template_variables: { body: ['{{contact.name}}', '{{contact.attributes.visits}}'] },
    });
    expect(res.body.data.broadcast.preflight).toMatchObject({ eligible: 2, excluded: { missing_variable: 1, opted_out: 1, invalid_phone: 1 } });
  });

  it.each([
    [{ template_name: 'nope' }, 400, 'invalid_template'],
    [{ template_variables: { body: ['only one'] } }, 400, 'template_variable_mismatch'],
    [{ audience: { segment_id: '00000000-0000-4000-8000-000000000000' } }, 404, 'SEGMENT_NOT_FOUND'],
    [{ audience: { filter: { match: 'all', conditions: [{ field: 'tags', op: 'has', value: 'nobody' }] } } }, 400, 'empty_audience'],
    [{ template_variables: { body: ['{{contact.email}}', 'x'] } }, 400, 'invalid_request'],
    [{ audience: {} }, 400, 'invalid_request'],
    [{ wave_size: 0 }, 400, 'invalid_request'],
  ])('When the request has %j, then %i %s and nothing is stored', async (change, status, code) => {
    const { call, project } = await setup();
    const res = await call.post('/v1/broadcasts', {
      name: 'x', template_name: 'promo', template_language: 'en_US', audience: { filter: vip }, template_variables: { body: ['a', 'b'] }, ...change,
    });
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(code);
    expect(await t.db.prisma.broadcast.count({ where: { projectId: project.id } })).toBe(0);
  });

  it('When the credential lacks broadcasts:manage, then 403; reads need broadcasts:read; a malformed or foreign id is 400/404', async () => {
    const { project, call } = await setup();
    const readOnly = api(t, (await t.admin.key(project.id, ['broadcasts:read'])).secret);
    const body = { name: 'x', template_name: 'notice', template_language: 'en_US', audience: { filter: vip } };
    expect((await readOnly.post('/v1/broadcasts', body)).body.error.code).toBe('insufficient_scope');
    const id = (await call.post('/v1/broadcasts', body)).body.data.broadcast.id;
    expect((await readOnly.get(`/v1/broadcasts/${id}`)).status).toBe(200);
    expect((await readOnly.get('/v1/broadcasts/12')).body.error.code).toBe('invalid_id');
    const other = await setup();
    expect((await other.call.get(`/v1/broadcasts/${id}`)).body.error.code).toBe('BROADCAST_NOT_FOUND');
    expect((await other.call.get(`/v1/broadcasts/${id}/recipients`)).body.error.code).toBe('BROADCAST_NOT_FOUND');
  });
});

describe('approval (operator)', () => {
  it('When an operator approves, then the audience is frozen into recipients with resolved variables; later contacts do not join', async () => {
    const { call, project } = await setup();
    const id = (await call.post('/v1/broadcasts', {
      name: 'Spring', template_name: 'promo', template_language: 'en_US', audience: { filter: vip }, template_variables: { body: ['{{contact.name|friend}}', '{{contact.attributes.city}}'] },
    })).body.data.broadcast.id;
    const at = new Date(t.clock.now().getTime() + 21 * 3600_000).toISOString();
    const approved = await t.admin.call('post', `/admin/broadcasts/${id}/approve`, { approved_by: 'ops@example.com', scheduled_at: at });
    expect(approved.broadcast).toMatchObject({ status: 'scheduled', scheduled_at: at, approved_by: 'ops@example.com', recipient_count: 2, counts: null });
    await seedContacts(t, project.id, [{ phone: '14155550009', name: 'Late', tags: ['vip'], attributes: { city: 'Faro' }, optedIn: true }]);
    const recipients = await call.get(`/v1/broadcasts/${id}/recipients`);
    expect(recipients.body.data.total).toBe(2);
    expect(recipients.body.data.recipients.map((r: any) => [r.phone, r.status, r.variables.body])).toEqual([
      ['+14155550001', 'queued', ['Ada', 'Lisbon']],
      ['+14155550003', 'queued', ['friend', 'Lisbon']],
    ]);
    const again = await t.admin.call('get', `/admin/broadcasts/${id}`);
    expect(again.broadcast.recipient_count).toBe(2);
  });

  it('When a campaign is approved twice or canceled twice, then 409 conflict; cancel moves recipients to canceled', async () => {
    const { call } = await setup();
    const id = (await call.post('/v1/broadcasts', { name: 'x', template_name: 'notice', template_language: 'en_US', audience: { filter: vip } })).body.data.broadcast.id;
    await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
    await expect(t.admin.call('post', `/admin/broadcasts/${id}/approve`, {})).rejects.toThrow(/409/);
    const canceled = await t.admin.call('post', `/admin/broadcasts/${id}/cancel`, { reason: 'wrong list' });
    expect(canceled.broadcast).toMatchObject({ status: 'canceled', status_reason: 'wrong list' });
    const r = await call.get(`/v1/broadcasts/${id}/recipients?status=canceled&limit=1&offset=1`);
    expect(r.body.data).toMatchObject({ total: 3, limit: 1, offset: 1 });
    expect(r.body.data.recipients).toHaveLength(1);
    await expect(t.admin.call('post', `/admin/broadcasts/${id}/cancel`, {})).rejects.toThrow(/409/);
    const pending = (await call.post('/v1/broadcasts', { name: 'y', template_name: 'notice', template_language: 'en_US', audience: { filter: vip } })).body.data.broadcast.id;
    expect((await t.admin.call('post', `/admin/broadcasts/${pending}/cancel`, {})).broadcast.status).toBe('canceled');
    const queue = await t.admin.call('get', `/admin/broadcasts?status=canceled&limit=5`);
    expect(queue.total).toBeGreaterThanOrEqual(2);
  });

  it('When the segment of a pending campaign is deleted, then recipient_count is null and approval is 409', async () => {
    const { call } = await setup();
    const seg = (await call.post('/v1/segments', { name: 'VIPs', filter: vip })).body.data.segment.id;
    const id = (await call.post('/v1/broadcasts', { name: 'x', template_name: 'notice', template_language: 'en_US', audience: { segment_id: seg } })).body.data.broadcast.id;
    await call.delete(`/v1/segments/${seg}`);
    expect((await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.recipient_count).toBeNull();
    await expect(t.admin.call('post', `/admin/broadcasts/${id}/approve`, {})).rejects.toThrow(/409/);
  });
});

describe('no sending through /v1 (spec: broadcasts are never sent by the API)', () => {
  it('When a caller with broadcasts:manage tries to send, launch, approve or retry a campaign, then no such operation exists (404 or 405) and it stays pending_approval', async () => {
    const { call } = await setup();
    const body = { name: 'x', template_name: 'notice', template_language: 'en_US', audience: { filter: vip } };
    const id = (await call.post('/v1/broadcasts', body)).body.data.broadcast.id;
    for (const action of ['send', 'launch', 'approve', 'retry']) {
      const res = await call.post(`/v1/broadcasts/${id}/${action}`, {});
      expect([404, 405]).toContain(res.status);
      expect(res.body.success).toBe(false);
    }
    expect((await call.patch(`/v1/broadcasts/${id}`, { status: 'scheduled' })).status).toBe(405);
    expect((await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.status).toBe('pending_approval');
    const served = (await call.get('/v1/openapi.json')).body;
    const broadcastOps = Object.entries(served.paths as Record<string, Record<string, unknown>>)
      .filter(([p]) => p.startsWith('/v1/broadcasts'))
      .flatMap(([p, item]) => Object.keys(item).filter((m) => m !== 'parameters').map((m) => `${m.toUpperCase()} ${p}`));
    expect(broadcastOps.sort()).toEqual(['GET /v1/broadcasts', 'GET /v1/broadcasts/{id}', 'GET /v1/broadcasts/{id}/recipients', 'POST /v1/broadcasts']);
  });
});
