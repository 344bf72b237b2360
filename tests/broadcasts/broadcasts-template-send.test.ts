/** The spec's template rule on POST /v1/messages: a 4xx template error of the channel is 400 invalid_template (was 502). */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { projectWithKey, template } from '../support/broadcasts.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

const send = (key: string, body: object) => request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send(body);

describe('sendMessage (template rejections)', () => {
  it('When the channel does not know the template, then 400 invalid_template with the provider detail, nothing stored, the quota unit back', async () => {
    const { project, key } = await projectWithKey(t, ['messages:send']);
    const res = await send(key, { type: 'template', phone: '+14155550501', template: { name: 'never_made', language: 'en_US' } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_template', details: { provider_code: 132001 } });
    expect(await t.db.prisma.message.count({ where: { projectId: project.id } })).toBe(0);
    const counter = await t.db.prisma.sendCounter.findMany({ where: { projectId: project.id } });
    expect(counter.reduce((n, c) => n + c.count, 0)).toBe(0);
  });

  it('When the template is paused at the channel, then 400 invalid_template naming 132015', async () => {
    const { project, key } = await projectWithKey(t, ['messages:send']);
    const id = await template(t, project.id, 'paused_one', 'Hello');
    await request(t.sim!.url).post(`/_sim/templates/${id}/decision`).send({ decision: 'PAUSED' });
    const res = await send(key, { type: 'template', phone: '+14155550502', template: { name: 'paused_one', language: 'en_US' } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_template', details: { provider_code: 132015 } });
  });
});
