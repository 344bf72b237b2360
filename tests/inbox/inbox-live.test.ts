/**
 * The inbox's live stream (issue 68, item 4) through HTTP: two app instances on one database, each
 * with its own hub (nothing shared in memory). A page's stream on instance A gets a change made
 * through instance B (labels through the API) or recorded by another writer (a message); a page beyond the per-project
 * bound is refused with 429 while another project still gets its stream; a closed stream is let go;
 * a person of another project gets 404.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { person, uniqueEmail as email } from '../support/dashboard.js';
import { cookieOf as cookieOfAgent, openStream, type LiveStream as Stream } from '../support/live.js';
import { LIVE_LIMITS, openLiveStreams } from '../../http/dashboard/live-stream.js';

let a: TestApp;
let b: TestApp;
let server: http.Server;
let base: string;
beforeAll(async () => {
  a = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
  b = await startTestApp();
  server = http.createServer(a.app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 60_000);
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  await b.close();
  await a.close();
});

/** A signed-in person of the project on instance A, as the Cookie header a browser would send. */
async function cookieOf(projectId: string, role: 'owner' | 'member' = 'owner'): Promise<string> {
  return cookieOfAgent((await person(a, projectId, email(role), role)).agent);
}

const open = (path: string, cookie: string) => openStream(base, path, cookie);

async function shop() {
  const project = await a.admin.project();
  const key = (await a.admin.key(project.id, ['conversations:read', 'conversations:write'])).secret;
  const channel = await a.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  return { projectId: project.id, key, phoneNumberId: channel.phoneNumberId };
}

async function waitForStreams(projectId: string, n: number): Promise<void> {
  const until = Date.now() + 5000;
  while (openLiveStreams(a.db, projectId) !== n && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  expect(openLiveStreams(a.db, projectId)).toBe(n);
}

describe('the inbox live stream', () => {
  it('When a page of instance A is open, then a label change made through instance B and a message another writer recorded reach it, and closing it lets it go', async () => {
    const s = await shop();
    const cookie = await cookieOf(s.projectId);
    const first = await request(a.sim!.url).post('/_sim/inbound').send({ phone_number_id: s.phoneNumberId, from: '14155550971', name: 'Gus', text: 'First question' });
    expect(first.body.status_code).toBe(200);
    const { rows } = await a.db.pool.query<{ id: string }>('SELECT id::text FROM conversations WHERE project_id = $1', [s.projectId]);
    const id = rows[0].id;

    const stream = await open(`/dashboard/projects/${s.projectId}/conversations/events?selected=${id}`, cookie);
    expect(stream.status).toBe(200);
    // The first drawing brings the page up to date: the chat, the state line, the list, the counts.
    const drawn = await stream.until('hx-swap-oob="true"');
    expect(drawn).toContain('event: update');
    expect(drawn).toContain('First question');
    expect(drawn).toContain('hx-swap-oob="innerHTML:#messages"');
    expect(drawn).toContain('data-waiting="1"');

    // Instance B changes the labels through the API: its event, in the shared database, wakes A's page.
    const viaB = await request(b.app).patch(`/v1/conversations/${id}/labels`).set('Authorization', `Bearer ${s.key}`).send({ add: ['vip'] });
    expect(viaB.status).toBe(200);
    await stream.until('Labels: <span id="conversation-labels">vip</span>');

    // A message recorded by the other instance (here straight into the shared database) reaches the page too.
    await a.db.pool.query(
      `INSERT INTO messages (project_id, conversation_id, wamid, direction, type, content, status, send_ref, sent_at, status_at)
       VALUES ($1, $2, 'snd_live_b', 'outbound', 'text', '{"type":"text","content":"Answered from B"}', 'sent', 'snd_live_b', $3, $3)`,
      [s.projectId, id, new Date(a.clock.now().getTime() + 1000)],
    );
    await stream.until('Answered from B');

    expect(openLiveStreams(a.db, s.projectId)).toBe(1);
    stream.close();
    await waitForStreams(s.projectId, 0);
  });

  it('When more pages of one project are open than its bound, then the next is refused with 429 and another project still gets its stream; a stranger gets 404', async () => {
    const busy = await shop();
    const quiet = await shop();
    const busyCookie = await cookieOf(busy.projectId, 'member');
    const quietCookie = await cookieOf(quiet.projectId);
    const bound = LIVE_LIMITS.MAX_PER_PROJECT;
    LIVE_LIMITS.MAX_PER_PROJECT = 2;
    const streams: Stream[] = [];
    try {
      for (let i = 0; i < 2; i++) streams.push(await open(`/dashboard/projects/${busy.projectId}/conversations/events`, busyCookie));
      expect(streams.map((x) => x.status)).toEqual([200, 200]);
      const refused = await fetch(`${base}/dashboard/projects/${busy.projectId}/conversations/events`, { headers: { cookie: busyCookie } });
      expect([refused.status, refused.headers.get('retry-after')]).toEqual([429, '30']);
      await refused.body?.cancel();
      const other = await open(`/dashboard/projects/${quiet.projectId}/conversations/events`, quietCookie);
      expect(other.status).toBe(200);
      streams.push(other);
      const stranger = await fetch(`${base}/dashboard/projects/${quiet.projectId}/conversations/events`, { headers: { cookie: busyCookie } });
      expect(stranger.status).toBe(404);
      await stranger.body?.cancel();
    } finally {
      LIVE_LIMITS.MAX_PER_PROJECT = bound;
      for (const x of streams) x.close();
    }
    await waitForStreams(busy.projectId, 0);
    await waitForStreams(quiet.projectId, 0);
  });
});
