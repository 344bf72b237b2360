/**
 * WhatsApp Cloud API simulator (simulator/): Graph API shapes, signed webhooks to a real local
 * receiver, faults, templates, resumable upload handles, media expiry with an injected clock.
 */
import { describe, it, expect, beforeAll, afterAll, beforeEach } from '@jest/globals';
import { createHmac, timingSafeEqual } from 'node:crypto';
import http, { type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { createSimulator, type Simulator } from '../../simulator/app.js';
import { DEFAULT_LIMITS, metaCallbackRetryDelaysMs } from '../../simulator/state.js';

const SECRET = 'test-app-secret';
const VERIFY = 'verify-me';
const DAY = 24 * 3600 * 1000;

// ---------------------------------------------------------------------------------------------
// Helpers

interface Received {
  headers: IncomingHttpHeaders;
  raw: string;
  body: any;
  sigOk: boolean;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A real webhook endpoint: answers the GET handshake and recomputes every POST's signature. */
async function startReceiver() {
  const got: Received[] = [];
  let status = 200;
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET') {
      const ok = u.searchParams.get('hub.mode') === 'subscribe' && u.searchParams.get('hub.verify_token') === VERIFY;
      res.writeHead(ok ? 200 : 403, { 'content-type': 'text/plain' });
      res.end(ok ? u.searchParams.get('hub.challenge') : 'forbidden');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const expected = Buffer.from('sha256=' + createHmac('sha256', SECRET).update(raw).digest('hex'));
      const given = Buffer.from(String(req.headers['x-hub-signature-256'] ?? ''));
      got.push({ headers: req.headers, raw, body: JSON.parse(raw), sigOk: given.length === expected.length && timingSafeEqual(given, expected) });
      res.writeHead(status);
      res.end();
    });
  });
  const url = await listen(server);
  return {
    url: `${url}/webhook`,
    got,
    setStatus: (s: number) => void (status = s),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

async function waitFor<T>(fn: () => T | undefined | false | null, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('waitFor: timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Every change value of a notification (a batch may carry several entries and changes). */
const valuesOf = (r: Received): any[] => (r.body.entry ?? []).flatMap((e: any) => (e.changes ?? []).map((c: any) => c.value));
const statusesOf = (got: Received[], wamid: string) =>
  got.flatMap((r) => valuesOf(r).flatMap((v) => (v?.statuses ?? []) as any[])).filter((s) => s.id === wamid);

class TestClock {
  t = Date.UTC(2030, 0, 15, 12, 0, 0);
  now() {
    return new Date(this.t);
  }
}

// ---------------------------------------------------------------------------------------------

let sim: Simulator;
let server: Server;
let base: string;
let rx: Awaited<ReturnType<typeof startReceiver>>;
const clock = new TestClock();
let pn: { phone_number_id: string; waba_id: string; app_id: string; access_token: string; display_phone_number: string; webhook_verification: any };

const register = async () =>
  (await request(base).post('/_sim/phone-numbers').send({ callback_url: rx.url, app_secret: SECRET, verify_token: VERIFY }).expect(201)).body;
const send = (body: object, token = pn.access_token, id = pn.phone_number_id) =>
  request(base).post(`/v26.0/${id}/messages`).set('Authorization', `Bearer ${token}`).send(body);
const text = (to = '+15551230001') => ({ messaging_product: 'whatsapp', recipient_type: 'individual', to, type: 'text', text: { body: 'hello' } });

beforeAll(async () => {
  rx = await startReceiver();
  sim = createSimulator({
    clock,
    autoStatusDelaysMs: { delivered: 20, read: 20 },
    limits: { callbackRetryDelaysMs: [50], uploadLimitBytes: 2 * 1024 * 1024 },
  });
  server = http.createServer(sim.app);
  base = await listen(server);
  pn = await register();
});

afterAll(async () => {
  await sim.close();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  await rx.close();
});

beforeEach(async () => {
  await request(base).delete('/_sim/faults').expect(200);
  rx.setStatus(200);
});

/** A batch window no test waits out: closeWindowWhenIn closes it. */
const HELD_OPEN_MS = 10 * 60_000;
/** Batches opened from now wait for closeWindowWhenIn; one opened before (an earlier test's statuses, a short window) goes now. */
const holdWindowsOpen = () => {
  sim.state.limits.statusBatchMs = HELD_OPEN_MS;
  sim.flushStatusBatches();
};
/** Wait until every message's 'sent' status waits in a batch, then close the windows (the clock of `statusBatchMs`). */
const closeWindowWhenIn = async (wamids: string[]) => {
  await waitFor(() => wamids.every((w) => sim.batchedStatuses().some((s) => s.wamid === w && s.status === 'sent')));
  sim.flushStatusBatches();
};

describe('WhatsApp Cloud API simulator', () => {
  it('batches the automatic statuses of one number raised together into one notification; with statusBatchMs 0 each goes alone', async () => {
    const sendThree = async () => {
      const res = await Promise.all(['+15551230031', '+15551230032', '+15551230033'].map((to) => send(text(to)).expect(200)));
      return res.map((r) => r.body.messages[0].id as string);
    };
    const sentHooks = (wamids: string[]) => rx.got.filter((r) => valuesOf(r).some((v) => (v.statuses ?? []).some((s: any) => wamids.includes(s.id) && s.status === 'sent')));
    try {
      // The window is held open until the three 'sent' statuses are in it, then closed: no machine is too slow for it.
      holdWindowsOpen();
      const batched = await sendThree();
      await closeWindowWhenIn(batched);
      await waitFor(() => batched.every((w) => statusesOf(rx.got, w).some((s) => s.status === 'sent')));
      const [hook, ...others] = sentHooks(batched);
      expect(others).toEqual([]);
      expect(hook.sigOk).toBe(true);
      expect(hook.body.entry[0].changes[0].value.statuses.map((s: any) => s.id).sort()).toEqual([...batched].sort());

      sim.state.limits.statusBatchMs = 0;
      sim.flushStatusBatches(); // the later statuses of the batched three, still held, go before
      const alone = await sendThree();
      await waitFor(() => alone.every((w) => statusesOf(rx.got, w).some((s) => s.status === 'sent')));
      expect(sentHooks(alone).map((h) => h.body.entry[0].changes[0].value.statuses.length)).toEqual([1, 1, 1]);
    } finally {
      sim.state.limits.statusBatchMs = DEFAULT_LIMITS.statusBatchMs;
      sim.flushStatusBatches();
    }
  });

  it('batches the statuses of several numbers of one app into one notification, as Meta does: an entry per WABA, a change per number, several statuses in each', async () => {
    // Two more numbers of the app (same callback URL and secret): one in pn's WABA, one in a WABA of its own.
    const sameWaba = (await request(base).post('/_sim/phone-numbers').send({ callback_url: rx.url, app_secret: SECRET, verify_token: VERIFY, waba_id: pn.waba_id }).expect(201)).body;
    const ownWaba = await register();
    expect(sameWaba.waba_id).toBe(pn.waba_id);
    try {
      holdWindowsOpen();
      const sends = await Promise.all([
        send(text('+15551230041')), send(text('+15551230042')),
        send(text('+15551230043'), sameWaba.access_token, sameWaba.phone_number_id), send(text('+15551230044'), sameWaba.access_token, sameWaba.phone_number_id),
        send(text('+15551230045'), ownWaba.access_token, ownWaba.phone_number_id),
      ]);
      const wamids = sends.map((r) => r.body.messages[0].id as string);
      await closeWindowWhenIn(wamids);
      await waitFor(() => wamids.every((w) => statusesOf(rx.got, w).some((s) => s.status === 'sent')));
      const hooks = rx.got.filter((r) => valuesOf(r).some((v) => (v.statuses ?? []).some((s: any) => wamids.includes(s.id) && s.status === 'sent')));
      expect(hooks).toHaveLength(1);
      const [hook] = hooks;
      expect(hook.sigOk).toBe(true);
      expect(hook.body.object).toBe('whatsapp_business_account');
      const byEntry = Object.fromEntries(hook.body.entry.map((e: any) => [e.id, e.changes]));
      expect(Object.keys(byEntry).sort()).toEqual([pn.waba_id, ownWaba.waba_id].sort());
      // pn's WABA: one change per number, each with its own metadata and its own statuses.
      const changes = byEntry[pn.waba_id] as any[];
      expect(changes.map((c) => c.field)).toEqual(['messages', 'messages']);
      // Only this test's messages: statuses the earlier tests' sends still owe may share the batch.
      const ours = (c: any) => c.value.statuses.map((x: any) => x.id).filter((id: string) => wamids.includes(id)).sort();
      const byNumber = Object.fromEntries(changes.map((c) => [c.value.metadata.phone_number_id, ours(c)]));
      expect(byNumber).toEqual({ [pn.phone_number_id]: wamids.slice(0, 2).sort(), [sameWaba.phone_number_id]: wamids.slice(2, 4).sort() });
      expect(byEntry[ownWaba.waba_id]).toHaveLength(1);
      expect(byEntry[ownWaba.waba_id][0].value.metadata.phone_number_id).toBe(ownWaba.phone_number_id);
      expect(ours(byEntry[ownWaba.waba_id][0])).toEqual([wamids[4]]);
      await request(base).post('/_sim/phone-numbers').send({ callback_url: rx.url, app_secret: SECRET, waba_id: 'not digits' }).expect(400);
    } finally {
      sim.state.limits.statusBatchMs = DEFAULT_LIMITS.statusBatchMs;
      sim.flushStatusBatches();
    }
  });

  it('registers a number and performs the hub.challenge handshake', async () => {
    expect(pn.phone_number_id).toMatch(/^\d{15}$/);
    expect(pn.waba_id).toMatch(/^\d{15}$/);
    expect(pn.access_token).toMatch(/^EAA\w+$/);
    expect(pn.display_phone_number).toMatch(/^\d+$/);
    expect(pn.webhook_verification).toMatchObject({ ok: true, status_code: 200 });
    await request(base).get('/_sim/health').expect(200, { ok: true });
  });

  it('sends a text: Meta-shaped response, then signed sent → delivered → read webhooks', async () => {
    const res = await send(text('+1 555 123 0002')).expect(200);
    expect(res.body).toEqual({ messaging_product: 'whatsapp', contacts: [{ input: '+1 555 123 0002', wa_id: '15551230002', user_id: expect.stringMatching(/^US\.\d{20}$/) }], messages: [{ id: expect.any(String) }] });
    const wamid: string = res.body.messages[0].id;
    expect(wamid).toMatch(/^wamid\.[A-Za-z0-9+/]+=*$/);
    const raw = Buffer.from(wamid.slice(6), 'base64');
    expect([raw[0], raw[1]]).toEqual([0x1c, 0x18]);
    expect(raw.subarray(3, 3 + raw[2]).toString()).toBe('15551230002');

    const sts = await waitFor(() => (statusesOf(rx.got, wamid).length >= 3 ? statusesOf(rx.got, wamid) : null));
    expect(sts.map((s) => s.status)).toEqual(['sent', 'delivered', 'read']);
    const [sent, delivered, read] = sts;
    expect(sent).toMatchObject({ id: wamid, recipient_id: '15551230002', timestamp: String(Math.floor(clock.t / 1000)) });
    expect(sent.conversation).toEqual({ id: expect.stringMatching(/^[0-9a-f]{32}$/), expiration_timestamp: expect.any(String), origin: { type: 'service' } });
    expect(sent.pricing).toEqual({ billable: false, pricing_model: 'PMP', category: 'service', type: 'free_customer_service' });
    expect(delivered.conversation.expiration_timestamp).toBeUndefined();
    expect(read.conversation).toBeUndefined();
    expect(read.pricing).toBeUndefined();

    const hook = rx.got.find((r) => r.body.entry.length === 1 && r.body.entry[0].changes.length === 1 && r.body.entry[0].changes[0].value.statuses?.[0]?.id === wamid)!;
    expect(hook.sigOk).toBe(true);
    expect(hook.headers['content-type']).toBe('application/json');
    expect(hook.body).toMatchObject({
      object: 'whatsapp_business_account',
      entry: [{ id: pn.waba_id, changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata: { display_phone_number: pn.display_phone_number, phone_number_id: pn.phone_number_id } } }] }],
    });
    const logged = await request(base).get(`/_sim/messages?phone_number_id=${pn.phone_number_id}&to=15551230002`).expect(200);
    expect(logged.body.data.at(-1)).toMatchObject({ wamid, type: 'text', status: 'read', payload: { text: { body: 'hello' } } });
  });
});

describe('WhatsApp Cloud API simulator', () => {
  it('refuses a missing, wrong or other number’s token with Graph error 190 (HTTP 401)', async () => {
    const other = await register();
    for (const auth of [undefined, 'Bearer nope', `Bearer ${other.access_token}`]) {
      const r = request(base).post(`/v26.0/${pn.phone_number_id}/messages`);
      const res = await (auth ? r.set('Authorization', auth) : r).send(text());
      expect(res.status).toBe(401);
      expect(res.body.error).toMatchObject({ type: 'OAuthException', code: 190, fbtrace_id: expect.any(String) });
    }
  });

  it('validates the body like Meta (code 100 / 131008 / 131009)', async () => {
    const noProduct = await send({ to: '15551230001', type: 'text', text: { body: 'x' } }).expect(400);
    expect(noProduct.body.error).toMatchObject({ code: 100, message: '(#100) The parameter messaging_product is required.' });
    const noBody = await send({ messaging_product: 'whatsapp', recipient_type: 'individual', to: '15551230001', type: 'text', text: {} }).expect(400);
    expect(noBody.body.error).toMatchObject({ code: 131008, error_data: { messaging_product: 'whatsapp', details: expect.stringContaining("text['body']") } });
    const badType = await send({ messaging_product: 'whatsapp', recipient_type: 'individual', to: '15551230001', type: 'fax', fax: {} }).expect(400);
    expect(badType.body.error.code).toBe(100);
    const tooManyButtons = await send({
      messaging_product: 'whatsapp', recipient_type: 'individual', to: '15551230001', type: 'interactive',
      interactive: { type: 'button', body: { text: 'pick' }, action: { buttons: [1, 2, 3, 4].map((i) => ({ type: 'reply', reply: { id: `b${i}`, title: `B${i}` } })) } },
    }).expect(400);
    expect(tooManyButtons.body.error.code).toBe(131009);
  });

  describe('faults', () => {
    it('131047 answers Meta’s 400 body, once', async () => {
      await request(base).post('/_sim/faults').send({ graph_error: { code: 131047 } }).expect(201);
      const res = await send(text()).expect(400);
      expect(res.body).toEqual({
        error: {
          message: '(#131047) Re-engagement message',
          type: 'OAuthException',
          code: 131047,
          error_data: { messaging_product: 'whatsapp', details: 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.' },
          fbtrace_id: expect.any(String),
        },
      });
      await send(text()).expect(200);
    });

    it('rate limit 130429, token 190, plain 5xx, and scoping to one number', async () => {
      const other = await register();
      await request(base).post('/_sim/faults').send({ phone_number_id: other.phone_number_id, graph_error: { code: 130429 } }).expect(201);
      await send(text()).expect(200);
      const limited = await send(text(), other.access_token, other.phone_number_id).expect(429);
      expect(limited.body.error).toMatchObject({ code: 130429, message: '(#130429) Rate limit hit' });

      await request(base).post('/_sim/faults').send({ graph_error: { code: 190 } }).expect(201);
      expect((await send(text()).expect(401)).body.error).toMatchObject({ code: 190, type: 'OAuthException' });

      await request(base).post('/_sim/faults').send({ http_status: 503, count: 2 }).expect(201);
      for (let i = 0; i < 2; i++) {
        const res = await send(text()).expect(503);
        expect(res.headers['content-type']).toMatch(/text\/html/);
      }
      await send(text()).expect(200);
    });

    it('latency delays the answer; timeout never answers', async () => {
      await request(base).post('/_sim/faults').send({ latency_ms: 250 }).expect(201);
      const t0 = Date.now();
      await send(text()).expect(200);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(240);

      await request(base).post('/_sim/faults').send({ timeout: true }).expect(201);
      await expect(send(text()).timeout(300)).rejects.toThrow(/Timeout/i);
      await send(text()).expect(200);
    });

    it('async_error: accepted, then a failed status webhook', async () => {
      await request(base).post('/_sim/faults').send({ async_error: { code: 131026, title: 'Message undeliverable', details: 'Unable to deliver.' } }).expect(201);
      const wamid = (await send(text()).expect(200)).body.messages[0].id;
      const [failed] = await waitFor(() => (statusesOf(rx.got, wamid).length ? statusesOf(rx.got, wamid) : null));
      expect(failed).toMatchObject({ status: 'failed', errors: [{ code: 131026, title: 'Message undeliverable', error_data: { details: 'Unable to deliver.' } }] });
    });
  });

  it('plays the 2026 channel: a username user without a phone writes with BSUIDs, is answered by recipient (to wins over it), statuses carry recipient_user_id and the username', async () => {
    const u = (await request(base).post('/_sim/users').send({ phone_number_id: pn.phone_number_id, username: 'mira.k', phone: '+15557650001' }).expect(201)).body;
    expect(u).toMatchObject({ user_id: expect.stringMatching(/^US\.\d{20}$/), parent_user_id: expect.stringMatching(/^US\.ENT\.\d{20}$/), phone_shared: false });
    const inb = await request(base).post('/_sim/inbound').send({ phone_number_id: pn.phone_number_id, user_id: u.user_id, text: 'hey' }).expect(200);
    const value = rx.got.find((r) => r.body.entry[0].changes[0].value.messages?.[0]?.id === inb.body.wamid)!.body.entry[0].changes[0].value;
    expect(value.contacts).toEqual([{ profile: { name: 'mira.k', username: 'mira.k' }, user_id: u.user_id, parent_user_id: u.parent_user_id }]);
    expect(value.messages[0]).toMatchObject({ from_user_id: u.user_id, from_parent_user_id: u.parent_user_id });
    expect(value.messages[0].from).toBeUndefined();

    const res = await send({ messaging_product: 'whatsapp', recipient_type: 'individual', recipient: u.user_id, type: 'text', text: { body: 'hi Mira' } });
    expect([res.status, res.body.error]).toEqual([200, undefined]);
    expect(res.body.contacts).toEqual([{ input: u.user_id, user_id: u.user_id }]);
    const wamid = res.body.messages[0].id;
    const sts = await waitFor(() => (statusesOf(rx.got, wamid).length >= 2 ? statusesOf(rx.got, wamid) : null));
    expect(sts[0]).toMatchObject({ status: 'sent', recipient_user_id: u.user_id, recipient_parent_user_id: u.parent_user_id });
    expect(sts[0].recipient_id).toBeUndefined();
    const deliveredValue = rx.got.flatMap(valuesOf).find((v) => v.statuses?.some((x: any) => x.id === wamid && x.status === 'delivered'))!;
    expect(deliveredValue.contacts[0]).toMatchObject({ user_id: u.user_id, profile: { username: 'mira.k' } });

    // With both, `to` wins; an unknown BSUID and a malformed one are refused.
    const both = await send({ messaging_product: 'whatsapp', recipient_type: 'individual', to: '+15557650009', recipient: u.user_id, type: 'text', text: { body: 'x' } }).expect(200);
    expect(both.body.contacts[0]).toMatchObject({ input: '+15557650009', wa_id: '15557650009' });
    expect((await send({ messaging_product: 'whatsapp', recipient_type: 'individual', recipient: 'US.11111111111111111111', type: 'text', text: { body: 'x' } })).body.error.code).toBe(131026);
    expect((await send({ messaging_product: 'whatsapp', recipient_type: 'individual', recipient: 'nope', type: 'text', text: { body: 'x' } })).body.error.code).toBe(100);
  });
});

describe('WhatsApp Cloud API simulator', () => {
  it('injects inbound messages with Meta’s payload and reports the callback’s answer', async () => {
    const res = await request(base).post('/_sim/inbound').send({ phone_number_id: pn.phone_number_id, from: '+15557654321', name: 'Ana', text: 'Oi!' }).expect(200);
    expect(res.body).toEqual({ wamid: expect.stringMatching(/^wamid\./), delivered: true, status_code: 200, error: null });
    const hook = rx.got.find((r) => r.body.entry[0].changes[0].value.messages?.[0]?.id === res.body.wamid)!;
    expect(hook.sigOk).toBe(true);
    expect(hook.body.entry[0].changes[0]).toEqual({
      field: 'messages',
      value: {
        messaging_product: 'whatsapp',
        metadata: { display_phone_number: pn.display_phone_number, phone_number_id: pn.phone_number_id },
        // Since April 2026 every messages webhook names the user's BSUID (and the parent BSUID).
        contacts: [{ profile: { name: 'Ana' }, wa_id: '15557654321', user_id: expect.stringMatching(/^US\.\d{20}$/), parent_user_id: expect.stringMatching(/^US\.ENT\.\d{20}$/) }],
        messages: [{
          from: '15557654321', from_user_id: expect.stringMatching(/^US\.\d{20}$/), from_parent_user_id: expect.stringMatching(/^US\.ENT\./),
          id: res.body.wamid, timestamp: String(Math.floor(clock.t / 1000)), type: 'text', text: { body: 'Oi!' },
        }],
      },
    });

    const reply = await request(base).post('/_sim/inbound').send({
      phone_number_id: pn.phone_number_id, from: '15557654321', type: 'interactive',
      object: { type: 'button_reply', button_reply: { id: 'yes', title: 'Yes' } }, context: { from: pn.display_phone_number, id: 'wamid.X' },
    }).expect(200);
    const msg = rx.got.find((r) => r.body.entry[0].changes[0].value.messages?.[0]?.id === reply.body.wamid)!.body.entry[0].changes[0].value.messages[0];
    expect(msg).toMatchObject({ type: 'interactive', interactive: { type: 'button_reply', button_reply: { id: 'yes' } }, context: { id: 'wamid.X' } });

    // An image arrives with a media id the business can fetch and download with its token.
    const img = await request(base).post('/_sim/inbound').send({ phone_number_id: pn.phone_number_id, from: '15557654321', type: 'image', object: { caption: 'look' } }).expect(200);
    const image = rx.got.find((r) => r.body.entry[0].changes[0].value.messages?.[0]?.id === img.body.wamid)!.body.entry[0].changes[0].value.messages[0].image;
    expect(image).toMatchObject({ caption: 'look', mime_type: 'image/png', id: expect.stringMatching(/^\d+$/), sha256: expect.any(String) });
    const meta = await request(base).get(`/v26.0/${image.id}`).set('Authorization', `Bearer ${pn.access_token}`).expect(200);
    const dl = await request(meta.body.url).get('').set('Authorization', `Bearer ${pn.access_token}`).buffer(true).expect(200);
    expect(dl.headers['content-type']).toBe('image/png');

    // A callback answering 500 is reported (and retried in the background).
    rx.setStatus(500);
    const failed = await request(base).post('/_sim/inbound').send({ phone_number_id: pn.phone_number_id, from: '15557654321', text: 'again' }).expect(200);
    expect(failed.body).toMatchObject({ delivered: false, status_code: 500 });
  });

  it('sends manual statuses, including failed with errors', async () => {
    const quiet = createSimulator({ autoStatusDelaysMs: null });
    const qs = http.createServer(quiet.app);
    const qbase = await listen(qs);
    try {
      const p = (await request(qbase).post('/_sim/phone-numbers').send({ callback_url: rx.url, app_secret: SECRET }).expect(201)).body;
      const wamid = (await request(qbase).post(`/v26.0/${p.phone_number_id}/messages`).set('Authorization', `Bearer ${p.access_token}`).send(text()).expect(200)).body.messages[0].id;
      await new Promise((r) => setTimeout(r, 100));
      expect(statusesOf(rx.got, wamid)).toHaveLength(0);
      const r = await request(qbase).post('/_sim/status').send({ wamid, status: 'failed', errors: [{ code: 131049, title: 'Not delivered', error_data: { details: 'ecosystem' } }] }).expect(200);
      expect(r.body).toMatchObject({ delivered: true, status_code: 200 });
      expect(statusesOf(rx.got, wamid)).toEqual([
        { id: wamid, status: 'failed', timestamp: expect.any(String), recipient_id: '15551230001', errors: [{ code: 131049, title: 'Not delivered', message: 'Not delivered', error_data: { details: 'ecosystem' }, href: expect.any(String) }] },
      ]);
      await request(qbase).post('/_sim/status').send({ wamid: 'wamid.unknown', status: 'read' }).expect(404);
    } finally {
      await quiet.close();
      await new Promise<void>((r) => qs.close(() => r()));
    }
  });
});

describe('WhatsApp Cloud API simulator', () => {
  describe('templates, resumable upload and media', () => {
    const auth = () => ({ Authorization: `Bearer ${pn.access_token}` });
    const body = (name: string, extra: object[] = []) => ({
      name, language: 'en_US', category: 'UTILITY',
      components: [...extra, { type: 'BODY', text: 'Hi {{1}}, order {{2}} shipped.', example: { body_text: [['Ana', '42']] } }],
    });
    const upload = async (bytes = Buffer.from('\x89PNG fake image bytes'), encodeId = false) => {
      const s = await request(base).post(`/v26.0/${pn.app_id}/uploads`).query({ file_name: 'a.png', file_length: bytes.length, file_type: 'image/png' }).set(auth()).expect(200);
      expect(s.body.id).toMatch(/^upload:/);
      // Sent as is, the ?sig= part becomes a query parameter (as with Meta); URL-encoded works too.
      const path = `/v26.0/${encodeId ? encodeURIComponent(s.body.id) : s.body.id}`;
      const h = await request(base).post(path).set('Authorization', `OAuth ${pn.access_token}`).set('file_offset', '0').set('content-type', 'application/octet-stream').send(bytes).expect(200);
      const st = await request(base).get(path).set('Authorization', `OAuth ${pn.access_token}`).expect(200);
      expect(st.body).toEqual({ id: s.body.id, file_offset: bytes.length });
      return h.body.h as string;
    };

    it('creates, lists, refuses duplicates, decides (webhook) and deletes', async () => {
      const created = await request(base).post(`/v26.0/${pn.waba_id}/message_templates`).set(auth()).send(body('order_shipped')).expect(200);
      expect(created.body).toEqual({ id: expect.stringMatching(/^\d+$/), status: 'PENDING', category: 'UTILITY' });
      const id = created.body.id;

      const dup = await request(base).post(`/v26.0/${pn.waba_id}/message_templates`).set(auth()).send(body('order_shipped')).expect(400);
      expect(dup.body.error).toMatchObject({ code: 100, error_subcode: 2388024, type: 'OAuthException', error_user_title: expect.any(String) });
      const badName = await request(base).post(`/v26.0/${pn.waba_id}/message_templates`).set(auth()).send(body('Order Shipped')).expect(400);
      expect(badName.body.error.code).toBe(100);

      const list = await request(base).get(`/v26.0/${pn.waba_id}/message_templates`).query({ name: 'order_shipped' }).set(auth()).expect(200);
      expect(list.body.data).toEqual([expect.objectContaining({ id, name: 'order_shipped', language: 'en_US', status: 'PENDING', category: 'UTILITY' })]);
      expect(list.body.paging.cursors).toEqual({ before: expect.any(String), after: expect.any(String) });

      // Not approved yet: sending it fails like Meta.
      const tplMsg = { messaging_product: 'whatsapp', recipient_type: 'individual', to: '15551230003', type: 'template', template: { name: 'order_shipped', language: { policy: 'deterministic', code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ana' }, { type: 'text', text: '42' }] }] } };
      expect((await send(tplMsg).expect(400)).body.error.code).toBe(132001);

      const d = await request(base).post(`/_sim/templates/${id}/decision`).send({ decision: 'APPROVED' }).expect(200);
      expect(d.body).toMatchObject({ id, status: 'APPROVED', delivered: true, status_code: 200 });
      const hook = rx.got.find((r) => r.body.entry[0].changes[0].field === 'message_template_status_update' && r.body.entry[0].changes[0].value.message_template_id === Number(id))!;
      expect(hook.sigOk).toBe(true);
      expect(hook.body.entry[0]).toMatchObject({ id: pn.waba_id, time: expect.any(Number) });
      expect(hook.body.entry[0].changes[0].value).toMatchObject({ event: 'APPROVED', message_template_id: Number(id), message_template_name: 'order_shipped', message_template_language: 'en_US', reason: 'NONE' });

      const ok = await send(tplMsg).expect(200);
      expect(ok.body.messages[0]).toEqual({ id: expect.stringMatching(/^wamid\./), message_status: 'accepted' });
      const wrongCount = await send({ ...tplMsg, template: { ...tplMsg.template, components: [] } }).expect(400);
      expect(wrongCount.body.error.code).toBe(132000);
      const sent = await waitFor(() => statusesOf(rx.got, ok.body.messages[0].id).find((s) => s.status === 'sent'));
      expect(sent.pricing).toEqual({ billable: true, pricing_model: 'PMP', category: 'utility', type: 'regular' });

      await request(base).delete(`/v26.0/${pn.waba_id}/message_templates`).query({ name: 'order_shipped', hsm_id: id }).set(auth()).expect(200, { success: true });
      expect((await request(base).get(`/v26.0/${pn.waba_id}/message_templates`).query({ name: 'order_shipped' }).set(auth()).expect(200)).body.data).toEqual([]);
    });

    it('accepts a resumable-upload handle as header_handle once; refuses a media id', async () => {
      const h = await upload();
      expect(h).toMatch(/^4::/);
      const header = (handle: string) => [{ type: 'HEADER', format: 'IMAGE', example: { header_handle: [handle] } }];
      const tpl = await request(base).post(`/v26.0/${pn.waba_id}/message_templates`).set(auth()).send(body('with_image', header(h))).expect(200);
      const reused = await request(base).post(`/v26.0/${pn.waba_id}/message_templates`).set(auth()).send(body('with_image_again', header(h))).expect(400);
      expect(reused.body.error).toMatchObject({ code: 100, error_subcode: 2494102 });

      const media = await request(base).post(`/v26.0/${pn.phone_number_id}/media`).set(auth()).field('messaging_product', 'whatsapp').field('type', 'image/png').attach('file', Buffer.from('png'), { filename: 'a.png', contentType: 'image/png' }).expect(200);
      const byMediaId = await request(base).post(`/v26.0/${pn.waba_id}/message_templates`).set(auth()).send(body('with_media_id', header(media.body.id))).expect(400);
      expect(byMediaId.body.error).toMatchObject({ code: 100, error_subcode: 2494102 });

      // …and a handle is not a media id for sending.
      const byHandle = await send({ messaging_product: 'whatsapp', recipient_type: 'individual', to: '15551230001', type: 'image', image: { id: await upload(undefined, true) } }).expect(400);
      expect(byHandle.body.error.code).toBe(100);

      // Sending the approved media-header template needs a header image parameter.
      await request(base).post(`/_sim/templates/${tpl.body.id}/decision`).send({ decision: 'APPROVED' }).expect(200);
      const params = [{ type: 'body', parameters: [{ type: 'text', text: 'Ana' }, { type: 'text', text: '42' }] }];
      const tplSend = (components: object[]) => send({ messaging_product: 'whatsapp', recipient_type: 'individual', to: '15551230004', type: 'template', template: { name: 'with_image', language: { policy: 'deterministic', code: 'en_US' }, components } });
      expect((await tplSend(params).expect(400)).body.error.code).toBe(132012);
      await tplSend([{ type: 'header', parameters: [{ type: 'image', image: { id: media.body.id } }] }, ...params]).expect(200);
    });

    it('uploads media, serves it, and expires it 30 days later (injected clock)', async () => {
      const bytes = Buffer.from('%PDF-1.4 simulated');
      const up = await request(base).post(`/v26.0/${pn.phone_number_id}/media`).set(auth()).field('messaging_product', 'whatsapp').field('type', 'application/pdf').attach('file', bytes, { filename: 'doc.pdf', contentType: 'application/pdf' }).expect(200);
      expect(up.body).toEqual({ id: expect.stringMatching(/^\d{16}$/) });
      const id = up.body.id;
      const info = await request(base).get(`/v26.0/${id}`).set(auth()).expect(200);
      expect(info.body).toEqual({ messaging_product: 'whatsapp', url: expect.stringContaining('/whatsapp_business/attachments/?mid='), mime_type: 'application/pdf', sha256: expect.stringMatching(/^[0-9a-f]{64}$/), file_size: String(bytes.length), id });
      await send({ messaging_product: 'whatsapp', recipient_type: 'individual', to: '15551230001', type: 'document', document: { id, filename: 'doc.pdf' } }).expect(200);

      clock.t += 30 * DAY - 60_000;
      await request(base).get(`/v26.0/${id}`).set(auth()).expect(200);
      clock.t += 60_000;
      const gone = await request(base).get(`/v26.0/${id}`).set(auth()).expect(400);
      expect(gone.body.error).toMatchObject({ code: 100, error_subcode: 33, type: 'GraphMethodException' });
      const expired = await send({ messaging_product: 'whatsapp', recipient_type: 'individual', to: '15551230001', type: 'document', document: { id } }).expect(400);
      expect(expired.body.error.code).toBe(131053);
      const unknown = await send({ messaging_product: 'whatsapp', recipient_type: 'individual', to: '15551230001', type: 'image', image: { id: '1234567890123456' } }).expect(400);
      expect(unknown.body.error.code).toBe(131053);

      const wrongType = await request(base).post(`/v26.0/${pn.phone_number_id}/media`).set(auth()).field('messaging_product', 'whatsapp').field('type', 'application/x-msdownload').attach('file', Buffer.from('MZ'), 'a.exe').expect(400);
      expect(wrongType.body.error.code).toBe(100);
    });

    it('refuses bodies over the upload limit with 413', async () => {
      const big = Buffer.alloc(3 * 1024 * 1024, 1);
      const res = await request(base).post(`/v26.0/${pn.phone_number_id}/media`).set(auth()).field('messaging_product', 'whatsapp').attach('file', big, 'big.pdf').ok(() => true);
      expect(res.status).toBe(413);
    });
  });
});

describe('WhatsApp Cloud API simulator', () => {
  it('records a failed handshake without failing registration; enforces the 24 h window when asked', async () => {
    const p = (await request(base).post('/_sim/phone-numbers').send({ callback_url: rx.url, app_secret: SECRET, verify_token: 'wrong', enforce_customer_window: true }).expect(201)).body;
    expect(p.webhook_verification).toMatchObject({ ok: false, status_code: 403 });
    await request(base).patch(`/_sim/phone-numbers/${p.phone_number_id}`).send({ verify_token: VERIFY }).expect(200)
      .then((r) => expect(r.body.webhook_verification).toMatchObject({ ok: true }));

    const to = '15559990001';
    const first = (await send(text(to), p.access_token, p.phone_number_id).expect(200)).body.messages[0].id;
    const [failed] = await waitFor(() => (statusesOf(rx.got, first).length ? statusesOf(rx.got, first) : null));
    expect(failed).toMatchObject({ status: 'failed', errors: [{ code: 131047 }] });

    await request(base).post('/_sim/inbound').send({ phone_number_id: p.phone_number_id, from: to, text: 'hi' }).expect(200);
    const second = (await send(text(to), p.access_token, p.phone_number_id).expect(200)).body.messages[0].id;
    expect((await waitFor(() => statusesOf(rx.got, second)[0])).status).toBe('sent');
  });

  it('lists callback attempts and resets', async () => {
    const cb = await request(base).get('/_sim/callbacks?limit=5').expect(200);
    expect(cb.body.data.length).toBeGreaterThan(0);
    expect(cb.body.data[0]).toMatchObject({ url: rx.url, field: expect.any(String), status_code: expect.any(Number) });
    await request(base).post('/_sim/reset').send({ keep_phone_numbers: true }).expect(200);
    expect((await request(base).get('/_sim/messages').expect(200)).body.data).toEqual([]);
    await send(text()).expect(200);
  });
});

describe('simulator callback retries (Meta keeps retrying with decreasing frequency)', () => {
  it('has a schedule of hours: increasing delays, then hourly, for 7 days in all; a scale compresses it', () => {
    const delays = metaCallbackRetryDelaysMs();
    for (let i = 1; i < delays.length; i++) expect(delays[i]).toBeGreaterThanOrEqual(delays[i - 1]);
    const total = delays.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(6.9 * DAY);
    expect(total).toBeLessThanOrEqual(7 * DAY);
    expect(metaCallbackRetryDelaysMs(0.001).reduce((a, b) => a + b, 0)).toBeLessThan(11 * 60_000);
  });

  it('loses no status and no inbound message across a 5-minute outage of the receiver (schedule compressed 500×)', async () => {
    const scale = 0.002; // 5 minutes → 0.6 s
    const rx = await startReceiver();
    const sim = createSimulator({ autoStatusDelaysMs: { sent: 0, delivered: 10, read: 20 }, limits: { callbackRetryDelaysMs: metaCallbackRetryDelaysMs(scale), statusBatchMs: 0 } });
    const server = http.createServer(sim.app);
    const base = await listen(server);
    try {
      const pn = (await request(base).post('/_sim/phone-numbers').send({ callback_url: rx.url, app_secret: SECRET, verify_token: VERIFY }).expect(201)).body;
      rx.setStatus(503); // the service is down
      const outageEnds = Date.now() + 5 * 60_000 * scale;
      const wamids: string[] = [];
      for (let i = 0; i < 10; i++) {
        const res = await request(base)
          .post(`/v26.0/${pn.phone_number_id}/messages`)
          .set('Authorization', `Bearer ${pn.access_token}`)
          .send({ messaging_product: 'whatsapp', recipient_type: 'individual', to: `+1555000${1000 + i}`, type: 'text', text: { body: 'hi' } })
          .expect(200);
        wamids.push(res.body.messages[0].id);
        await request(base).post('/_sim/inbound').send({ phone_number_id: pn.phone_number_id, from: `1555000${2000 + i}`, text: `inbound ${i}` }).expect(200);
      }
      await new Promise((r) => setTimeout(r, Math.max(0, outageEnds - Date.now())));
      rx.setStatus(200); // back
      await waitFor(() => wamids.every((w) => ['sent', 'delivered', 'read'].every((st) => statusesOf(rx.got.filter((g) => g.sigOk), w).some((s) => s.status === st))), 20_000);
      const inbound = () => rx.got.flatMap((r) => (r.body.entry?.[0]?.changes?.[0]?.value?.messages ?? []) as any[]).map((m) => m.text?.body);
      await waitFor(() => Array.from({ length: 10 }, (_, i) => `inbound ${i}`).every((t) => inbound().includes(t)), 20_000);
      expect(sim.state.stats.callbacks_dropped).toBe(0);
    } finally {
      await sim.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await rx.close();
    }
  }, 60_000);
});
