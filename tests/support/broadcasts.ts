/** Helpers for the broadcast tests: a project with a channel, a template known on both sides, contacts, an engine. */
import request from 'supertest';
import { expect } from '@jest/globals';
import type { TestApp } from './app.js';
import { openChannel } from '../../lib/channel-settings/settings.js';
import { CloudApiClient } from '../../channel/cloud-api.js';
import { createLogger } from '../../lib/platform/logger.js';
import { startBroadcastEngine, type BroadcastEngineOptions, type RunningEngine } from '../../jobs/broadcast-engine.js';

export const ALL_SCOPES = ['broadcasts:read', 'broadcasts:manage', 'contacts:read', 'contacts:write'];

export async function projectWithKey(t: TestApp, scopes = ALL_SCOPES, extra: object = {}) {
  const project = await t.admin.project('Broadcast project', extra);
  const key = await t.admin.key(project.id, scopes);
  const channel = await t.db.prisma.channelSettings.findUnique({ where: { projectId: project.id } });
  return { project, key: key.secret, phoneNumberId: channel?.phoneNumberId ?? '' };
}

/** A template approved at the simulated channel and mirrored in our table. */
export async function template(t: TestApp, projectId: string, name: string, body: string, category = 'MARKETING') {
  if (t.sim) {
    const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, projectId))!;
    const example = (body.match(/\{\{\d+\}\}/g) ?? []).map((_, i) => `x${i}`);
    const created = await request(t.sim.url).post(`/v26.0/${channel.wabaId}/message_templates`).set('Authorization', `Bearer ${channel.accessToken}`)
      .send({ name, language: 'en_US', category, components: [{ type: 'BODY', text: body, ...(example.length ? { example: { body_text: [example] } } : {}) }] });
    expect(created.status).toBe(200);
    const decided = await request(t.sim.url).post(`/_sim/templates/${created.body.id}/decision`).send({ decision: 'APPROVED' });
    expect(decided.status).toBe(200);
    await t.db.prisma.template.create({
      data: { id: `tpl_${projectId}_${name}`, projectId, name, language: 'en_US', category, status: 'APPROVED', components: [{ type: 'BODY', text: body }], channelTemplateId: created.body.id },
    });
    return created.body.id as string;
  }
  await t.db.prisma.template.create({
    data: { id: `tpl_${projectId}_${name}`, projectId, name, language: 'en_US', category, status: 'APPROVED', components: [{ type: 'BODY', text: body }] },
  });
  return undefined;
}

export interface SeedContact {
  phone: string;
  name?: string | null;
  tags?: string[];
  attributes?: Record<string, unknown>;
  optedIn?: boolean;
  optedOut?: boolean;
}

/** Contacts inserted directly (phones as digits). */
export async function seedContacts(t: TestApp, projectId: string, contacts: SeedContact[]) {
  for (const c of contacts) {
    await t.db.pool.query(
      `INSERT INTO contacts (project_id, phone, name, tags, attributes, opted_in, opted_in_at, opted_out_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $6 THEN now() END, CASE WHEN $7 THEN now() END, now(), now())`,
      [projectId, c.phone, c.name ?? null, c.tags ?? [], JSON.stringify(c.attributes ?? {}), c.optedIn ?? false, c.optedOut ?? false],
    );
  }
}

/** Many opted-in contacts at once: phones base, base+1, … */
export async function seedMany(t: TestApp, projectId: string, n: number, base = 15550000000, tags: string[] = []) {
  await t.db.pool.query(
    `INSERT INTO contacts (project_id, phone, tags, opted_in, opted_in_at, created_at, updated_at)
     SELECT $1, ($2::bigint + g)::text, $4, true, now(), now(), now() FROM generate_series(0, $3 - 1) g`,
    [projectId, base, n, tags],
  );
}

/**
 * A created campaign of `n` opted-in contacts (phones from `base`, random unless given) on a MARKETING
 * template `promo` ("Hi {{1}}", the contact's name); `body` is added to the create request,
 * `projectExtra` to the project.
 */
export async function promoCampaign(t: TestApp, n: number, opts: { name?: string; base?: number; body?: object; projectExtra?: object } = {}) {
  const { project, key, phoneNumberId } = await projectWithKey(t, undefined, opts.projectExtra);
  await template(t, project.id, 'promo', 'Hi {{1}}');
  const base = opts.base ?? 15550000000 + Math.floor(Math.random() * 1e6) * 1000;
  await seedMany(t, project.id, n, base);
  const call = api(t, key);
  const res = await call.post('/v1/broadcasts', {
    name: opts.name ?? 'Spring', template_name: 'promo', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } },
    template_variables: { body: ['{{contact.name|friend}}'] }, ...opts.body,
  });
  expect(res.status).toBe(201);
  return { project, call, phoneNumberId, pnid: phoneNumberId, id: res.body.data.broadcast.id as string, base };
}

export function api(t: TestApp, key: string) {
  const auth = (r: request.Test) => r.set('Authorization', `Bearer ${key}`);
  return {
    get: (path: string) => auth(request(t.app).get(path)),
    post: (path: string, body?: object) => auth(request(t.app).post(path)).send(body),
    patch: (path: string, body: object) => auth(request(t.app).patch(path)).send(body),
    delete: (path: string) => auth(request(t.app).delete(path)),
  };
}

export function engineFor(t: TestApp, opts: BroadcastEngineOptions = {}): Promise<RunningEngine> {
  const channel = new CloudApiClient({ baseUrl: t.sim!.url, version: 'v26.0', timeoutMs: 2000 });
  return startBroadcastEngine(
    { db: t.db, clock: t.clock, logger: createLogger({ silent: !process.env.TEST_LOG, level: 'debug' }), secretBox: t.secretBox, channel },
    { schedule: false, leaseMs: 2000, idleMs: 50, ...opts },
  );
}

/** Ticks the engine until the broadcast reaches one of `statuses` (or the deadline). */
export async function runUntil(t: TestApp, engine: RunningEngine, id: string, statuses: string[], timeoutMs = 20_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await engine.tick();
    const { rows } = await t.db.pool.query<{ status: string }>('SELECT status FROM broadcasts WHERE id = $1', [id]);
    if (statuses.includes(rows[0].status)) {
      await engine.engine.idle();
      return rows[0].status;
    }
    if (Date.now() > deadline) throw new Error(`broadcast ${id} stayed ${rows[0].status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
