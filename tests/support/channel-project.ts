/**
 * A project connected to a test's own channel adapter (tests/support/memory-channel.ts,
 * text-only-channel.ts) on a number of its own, and the signed notification such a channel posts.
 */
import request from 'supertest';
import { createHmac } from 'node:crypto';
import type { TestApp } from './app.js';

export interface ChannelProject {
  id: string;
  key: string;
  phoneNumberId: string;
}

export async function projectOnChannel(t: TestApp, opts: { name: string; appSecret: string; scopes: string[]; kind?: string }): Promise<ChannelProject> {
  const p = await t.admin.project(opts.name);
  const phoneNumberId = String(1e12 + Math.floor(Math.random() * 1e11));
  await t.admin.call('put', `/admin/projects/${p.id}/channel`, {
    ...(opts.kind ? { kind: opts.kind } : {}),
    phone_number_id: phoneNumberId, waba_id: '2000300040005', app_id: '3000400050006', access_token: 'test-token', app_secret: opts.appSecret, verify_token: 'test-verify',
  });
  const key = await t.admin.key(p.id, opts.scopes);
  return { id: p.id, key: key.secret, phoneNumberId };
}

/** The channel's notification, posted to the project's webhook as a channel would (signed with the app secret). */
export function postNotification(t: TestApp, projectId: string, appSecret: string, body: object) {
  const raw = JSON.stringify(body);
  const signature = 'sha256=' + createHmac('sha256', appSecret).update(raw).digest('hex');
  return request(t.app).post(`/channel/${projectId}/webhook`).set('Content-Type', 'application/json').set('X-Hub-Signature-256', signature).send(raw);
}
