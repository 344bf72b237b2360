/**
 * A deployed bot's world for the tests that run one end to end: a project with its bot deployed
 * through the API (optionally a table first), a customer writing through the simulator, what the
 * simulator was asked to send, the bot log and the inbox rows. One copy, shared by the bot tests.
 */
import request from 'supertest';
import { expect } from '@jest/globals';
import type { TestApp } from './app.js';
import { inbound as inboundMessage } from './inbound.js';

/** A test app whose simulator sends no statuses or template decisions of its own, with a small, quick bot sandbox. */
export const QUICK_BOT_APP = {
  simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null },
  bot: { memoryMb: 16, startupTimeoutMs: 1000, eventTimeoutMs: 1500 },
};

export interface BotProject {
  projectId: string;
  key: string;
  phoneNumberId: string;
}

export interface BotProjectOptions {
  /** A table (id, phone, body) of this name made before the deploy. */
  table?: string;
  /** Deploy without the sample run (`force`): for bots whose sample run would loop. */
  force?: boolean;
  /** The key's scopes (code:read, code:write, tables:read, messages:send by default). */
  scopes?: string[];
}

export function botWorld(t: TestApp) {
  const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
  const admin = () => ({ Authorization: `Bearer ${t.adminToken}` });

  /** A project whose src/bot.ts is `source`, deployed (201, or the refusal's body in the failure). */
  async function botProject(source: string, opts: BotProjectOptions = {}): Promise<BotProject> {
    const project = await t.admin.project();
    const key = (await t.admin.key(project.id, opts.scopes ?? ['code:read', 'code:write', 'tables:read', 'messages:send'])).secret;
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
    if (opts.table) {
      const created = await request(t.app).post(`/admin/projects/${project.id}/tables`).set(admin())
        .send({ name: opts.table, columns: [{ name: 'id', type: 'bigserial', primary_key: true }, { name: 'phone', type: 'text' }, { name: 'body', type: 'text' }] });
      expect(created.status).toBe(201);
    }
    expect((await request(t.app).put('/v1/files/src/bot.ts').set(auth(key)).send({ content: source })).status).toBeLessThan(300);
    const res = await request(t.app).post('/v1/deployments').set(auth(key)).send(opts.force ? { force: true } : {});
    expect({ status: res.status, error: res.status === 201 ? undefined : res.body.error }).toEqual({ status: 201 });
    return { projectId: project.id, key, phoneNumberId: channel.phoneNumberId };
  }

  /** A customer's text message through the simulator (./inbound.ts). */
  async function inbound(phoneNumberId: string, from: string, text: string): Promise<void> {
    await inboundMessage(t, phoneNumberId, from, text);
  }

  /** The texts the simulator was asked to send from the number (to `to` only, when given), oldest first. */
  async function sentTexts(phoneNumberId: string, to?: string): Promise<string[]> {
    const res = await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}&limit=1000`);
    const all: any[] = Array.isArray(res.body) ? res.body : (res.body.messages ?? res.body.data ?? []);
    return all.filter((m) => !to || m.to === to).map((m) => m.payload?.text?.body as string);
  }

  /** The project's bot log, newest first. */
  async function botLogs(projectId: string): Promise<Array<{ kind: string; level: string; message: string }>> {
    return botLogsOf(t, projectId, 100);
  }

  /** The project's events still in the bot's inbox. */
  async function inboxRows(projectId: string): Promise<Array<{ abnormal_runs: number; set_aside: boolean }>> {
    return (await t.db.pool.query('SELECT abnormal_runs, set_aside_at IS NOT NULL AS set_aside FROM bot_inbox WHERE project_id = $1', [projectId])).rows;
  }

  /** Every row of a project table, through the API's pages. */
  async function tableRows(key: string, table: string): Promise<any[]> {
    const rows: any[] = [];
    for (let cursor: string | undefined; ;) {
      const res = await request(t.app).get(`/v1/tables/${table}/rows`).query({ limit: 50, ...(cursor ? { cursor } : {}) }).set(auth(key));
      expect(res.status).toBe(200);
      rows.push(...res.body.data.rows);
      cursor = res.body.data.nextCursor ?? undefined;
      if (!cursor) return rows;
    }
  }

  /** Reclaim passes (the clock moved past the lease each time) until only set-aside events remain. */
  async function settleAll(projectId: string) {
    for (let pass = 0; pass < 10; pass++) {
      await t.bot!.whenIdle();
      const rows = await inboxRows(projectId);
      if (rows.every((r) => r.set_aside)) return rows;
      t.clock.advance(120_000);
      await t.bot!.reclaim();
    }
    return inboxRows(projectId);
  }

  return { auth, admin, botProject, inbound, sentTexts, botLogs, inboxRows, tableRows, settleAll };
}

/**
 * A project with a key of these scopes, and its number; with `source`, its src/bot.ts written through
 * the files API (not deployed: see deployBot).
 */
export async function botSourceProject(t: TestApp, scopes: string[], source?: string): Promise<BotProject> {
  const project = await t.admin.project();
  const key = (await t.admin.key(project.id, scopes)).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  if (source !== undefined) {
    const put = await request(t.app).put('/v1/files/src/bot.ts').set({ Authorization: `Bearer ${key}` }).send({ content: source });
    expect(put.status).toBeLessThan(300);
  }
  return { projectId: project.id, key, phoneNumberId: channel.phoneNumberId };
}

/** Deploys the project's files (200 or 201, else the refusal's body in the failure); answers the deployment. */
export async function deployBot(t: TestApp, key: string): Promise<any> {
  const res = await request(t.app).post('/v1/deployments').set({ Authorization: `Bearer ${key}` }).send({});
  if (![200, 201].includes(res.status)) throw new Error(`deploy answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.data.deployment;
}

/** Every message the simulator was asked to send from the number, oldest first. */
export async function simSent(t: TestApp, phoneNumberId: string): Promise<any[]> {
  const res = await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}`);
  return Array.isArray(res.body) ? res.body : (res.body.messages ?? res.body.data ?? []);
}

/** The texts sent to `to` (a message naming it anywhere), oldest first; '' for a message without text. */
export async function repliesTo(t: TestApp, phoneNumberId: string, to: string): Promise<string[]> {
  return (await simSent(t, phoneNumberId)).filter((m) => JSON.stringify(m).includes(to)).map((m) => m.payload?.text?.body ?? '');
}

/** The project's bot log, newest first. */
export async function botLogsOf(t: TestApp, projectId: string, limit = 50): Promise<Array<{ kind: string; level: string; message: string }>> {
  const res = await request(t.app).get(`/admin/projects/${projectId}/bot/logs?limit=${limit}`).set({ Authorization: `Bearer ${t.adminToken}` });
  expect(res.status).toBe(200);
  return res.body.data.logs;
}

/** Polls `fn` every 10 ms until it answers something truthy; throws naming `what` after `withinMs`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false>, withinMs = 20_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - started > withinMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The median of `xs`. */
export const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
