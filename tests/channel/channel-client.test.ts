/**
 * WhatsApp Cloud API client (channel/) against the simulator running in-process: payload shapes,
 * error classification (auth, rejected, throttled, unavailable), mapping to the service's 502
 * errors, media, resumable upload handles and templates. No access token may appear in an error.
 */
import { describe, it, expect, beforeAll, afterAll, beforeEach } from '@jest/globals';
import http, { type Server } from 'node:http';
import { Socket, type AddressInfo } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { inspect } from 'node:util';
import winston from 'winston';
import { createSimulator, type Simulator } from '../../simulator/app.js';
import { CloudApiClient, type ChannelCredentials, type OutboundMessage } from '../../channel/cloud-api.js';
import { graphPayload } from '../../channel/messages.js';
import {
  ChannelError,
  isOutsideWindowError,
  isTemplateExists,
  isTemplateRejection,
} from '../../channel/errors.js';
import { channelApiError as toApiError, invalidTemplateApiError as toInvalidTemplateError } from '../../lib/channel-port/api-errors.js';
import { ApiError } from '../../lib/platform/errors.js';
import { timingBound } from '../support/retry-timing.js';

// A 1x1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const TO = '+15551230001';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
}

async function sim(base: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`simulator ${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function failure(p: Promise<unknown>): Promise<ChannelError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ChannelError) return e;
    throw e;
  }
  throw new Error('expected a ChannelError');
}

/** A winston logger writing into an array, to check what the client logs. */
function captureLogger() {
  const lines: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (c: Buffer) => lines.push(c.toString('utf8')));
  const logger = winston.createLogger({ level: 'debug', format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] });
  return { logger, lines };
}

const text = (body = 'hello'): OutboundMessage => ({ recipient: { kind: 'customer', phone: TO }, content: { type: 'text', text: { body } } });

let simulator: Simulator;
let server: Server;
let base: string;
let creds: ChannelCredentials;
let client: CloudApiClient;
const log = captureLogger();
const clients: CloudApiClient[] = [];
const makeClient = (opts: Partial<ConstructorParameters<typeof CloudApiClient>[0]> = {}) => {
  const c = new CloudApiClient({ baseUrl: base, version: 'v26.0', timeoutMs: 300, logger: log.logger, ...opts });
  clients.push(c);
  return c;
};

/** No form of the error, nor its API mapping, nor the logs carry the access token. */
const expectNoToken = (e: ChannelError, token = creds.accessToken) => {
  const api = toApiError(e);
  for (const s of [e.message, e.stack ?? '', JSON.stringify(e), inspect(e, { depth: 10 }), api.message, JSON.stringify(api.details ?? {}), inspect(api, { depth: 10 })]) {
    expect(s).not.toContain(token);
  }
  expect(log.lines.join('\n')).not.toContain(token);
};

const fault = (f: Record<string, unknown>) => sim(base, 'POST', '/_sim/faults', { phone_number_id: creds.phoneNumberId, ...f });

beforeAll(async () => {
  simulator = createSimulator({ autoStatusDelaysMs: null });
  server = http.createServer(simulator.app);
  base = await listen(server);
  const pn = await sim(base, 'POST', '/_sim/phone-numbers', { callback_url: 'http://127.0.0.1:9/webhook', app_secret: 'secret' });
  creds = { phoneNumberId: pn.phone_number_id, wabaId: pn.waba_id, appId: pn.app_id, accessToken: pn.access_token };
  client = makeClient();
});

afterAll(async () => {
  for (const c of clients) c.close();
  await simulator.close();
  await closeServer(server);
});

beforeEach(async () => {
  await sim(base, 'DELETE', '/_sim/faults');
});

describe('CloudApiClient against the simulator', () => {
  describe('messages', () => {
    it('sends text: returns a wamid and the simulator recorded the payload', async () => {
      const r = await client.sendMessage(creds, text('hi there'));
      expect(r.channelMessageId).toMatch(/^wamid\./);
      expect(r.waId).toBe('15551230001');
      const logged = await sim(base, 'GET', `/_sim/messages?phone_number_id=${creds.phoneNumberId}`);
      const m = logged.data.find((x: any) => x.wamid === r.channelMessageId);
      expect(m).toBeDefined();
      expect(m.type).toBe('text');
      expect(m.payload).toEqual({ messaging_product: 'whatsapp', recipient_type: 'individual', to: TO, type: 'text', text: { body: 'hi there' } });
    });

    it('sends image (uploaded id, caption) and document (link, filename)', async () => {
      const { id } = await client.uploadMedia(creds, { data: PNG, mimeType: 'image/png', filename: 'dot.png' });
      const img = await client.sendMessage(creds, { recipient: { kind: 'customer', phone: TO }, content: { type: 'image', image: { id, caption: 'a dot' } } });
      expect(img.channelMessageId).toMatch(/^wamid\./);
      const doc = await client.sendMessage(creds, { recipient: { kind: 'customer', phone: TO }, content: { type: 'document',
        document: { link: 'https://example.com/terms.pdf', filename: 'terms.pdf', caption: 'Terms' } } });
      expect(doc.channelMessageId).toMatch(/^wamid\./);
    });

    it('sends interactive button and list messages', async () => {
      const buttons = await client.sendMessage(creds, { recipient: { kind: 'customer', phone: TO }, content: { type: 'interactive',
        interactive: {
          type: 'button',
          header: { type: 'text', text: 'Order 42' },
          body: { text: 'Confirm the delivery slot?' },
          footer: { text: 'Reply below' },
          action: { buttons: [{ type: 'reply', reply: { id: 'yes', title: 'Yes' } }, { type: 'reply', reply: { id: 'no', title: 'No' } }] },
        } } });
      expect(buttons.channelMessageId).toMatch(/^wamid\./);
      const list = await client.sendMessage(creds, { recipient: { kind: 'customer', phone: TO }, content: { type: 'interactive',
        interactive: {
          type: 'list',
          body: { text: 'Pick a slot' },
          action: {
            button: 'Slots',
            sections: [
              { title: 'Morning', rows: [{ id: 'm1', title: '9:00', description: 'Early' }, { id: 'm2', title: '10:00' }] },
              { title: 'Afternoon', rows: [{ id: 'a1', title: '14:00' }] },
            ],
          },
        } } });
      expect(list.channelMessageId).toMatch(/^wamid\./);
    });

    it('sends an approved template with header and body parameters and a quick-reply button', async () => {
      const name = `order_update_${Date.now()}`;
      const t = await client.createTemplate(creds, {
        name,
        language: 'en_US',
        category: 'UTILITY',
        components: [
          { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}', example: { header_text: ['42'] } },
          { type: 'BODY', text: 'Hi {{1}}, your order ships on {{2}}.', example: { body_text: [['Ann', 'Monday']] } },
          { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'Stop updates' }] },
        ],
      });
      await sim(base, 'POST', `/_sim/templates/${t.id}/decision`, { decision: 'APPROVED' });
      const r = await client.sendMessage(creds, { recipient: { kind: 'customer', phone: TO }, content: { type: 'template',
        template: {
          name,
          language: { policy: 'deterministic', code: 'en_US' },
          components: [
            { type: 'header', parameters: [{ type: 'text', text: '42' }] },
            { type: 'body', parameters: [{ type: 'text', text: 'Ann' }, { type: 'text', text: 'Monday' }] },
            { type: 'button', sub_type: 'quick_reply', index: '0', parameters: [{ type: 'payload', payload: 'STOP' }] },
          ],
        } } });
      expect(r.channelMessageId).toMatch(/^wamid\./);
      expect(r.messageStatus).toBe('accepted');

      // A parameter-count mismatch is a template rejection (400 invalid_template for the service).
      const e = await failure(
        client.sendMessage(creds, { recipient: { kind: 'customer', phone: TO }, content: { type: 'template',
          template: { name, language: { policy: 'deterministic', code: 'en_US' }, components: [{ type: 'header', parameters: [{ type: 'text', text: '42' }] }] } } }),
      );
      expect(e.kind).toBe('rejected');
      expect(e.code).toBe(132000);
      expect(isTemplateRejection(e)).toBe(true);
      const api = toInvalidTemplateError(e);
      expect(api.status).toBe(400);
      expect(api.code).toBe('invalid_template');
      expect(api.message).toContain('localizable_params');
    });
  });

  describe('connections', () => {
    it('reuses one keep-alive socket and sets its TCP keep-alive once, not per send', async () => {
      const c = makeClient();
      const sockets = new Set<Socket>();
      let keepAliveCalls = 0;
      const original = Socket.prototype.setKeepAlive;
      Socket.prototype.setKeepAlive = function (this: Socket, ...args: Parameters<Socket['setKeepAlive']>) {
        keepAliveCalls++;
        sockets.add(this);
        return original.apply(this, args);
      };
      try {
        for (let i = 0; i < 10; i++) expect((await c.sendMessage(creds, text(`n${i}`))).channelMessageId).toMatch(/^wamid\./);
      } finally {
        Socket.prototype.setKeepAlive = original;
      }
      // One socket for ten sequential sends, its keep-alive set when it connected (10 × 2 before).
      expect(sockets.size).toBe(1);
      expect(keepAliveCalls).toBe(1);
    });
  });
});

describe('CloudApiClient against the simulator', () => {
  describe('errors', () => {
    it('a wrong token is kind auth → 502 upstream_auth_error, without the token anywhere', async () => {
      const bad = { ...creds, accessToken: 'EAAwrongtoken' + 'x'.repeat(40) };
      const e = await failure(client.sendMessage(bad, text()));
      expect(e.kind).toBe('auth');
      expect(e.httpStatus).toBe(401);
      expect(e.code).toBe(190);
      expect(e.retryable).toBe(false);
      expect(e.traceId).toBeTruthy();
      const api = toApiError(e);
      expect(api).toBeInstanceOf(ApiError);
      expect(api.status).toBe(502);
      expect(api.code).toBe('upstream_auth_error');
      expect(api.message).toMatch(/rejected the project's channel credentials/);
      expect(api.details).toMatchObject({ provider_code: 190, http_status: 401 });
      expectNoToken(e, bad.accessToken);
      expectNoToken(e, creds.accessToken);
    });

    it('scrubs a token the provider echoes back', async () => {
      await fault({ operation: 'messages', graph_error: { code: 100, message: `Invalid parameter access_token=${creds.accessToken}`, details: `token ${creds.accessToken} rejected` } });
      const e = await failure(client.sendMessage(creds, text()));
      expect(e.kind).toBe('rejected');
      expect(e.details).toContain('[redacted]');
      expectNoToken(e);
    });

    it('131047 → rejected, isOutsideWindowError, 502 upstream_error with the provider detail', async () => {
      await fault({ operation: 'messages', graph_error: { code: 131047 } });
      const e = await failure(client.sendMessage(creds, text()));
      expect(e.kind).toBe('rejected');
      expect(e.code).toBe(131047);
      expect(e.httpStatus).toBe(400);
      expect(e.title).toBe('Re-engagement message');
      expect(e.details).toMatch(/24 hours/);
      expect(isOutsideWindowError(e)).toBe(true);
      expect(isTemplateRejection(e)).toBe(false);
      const api = toApiError(e);
      expect(api.status).toBe(502);
      expect(api.code).toBe('upstream_error');
      expect(api.message).toMatch(/Re-engagement message/);
      expect(api.details).toEqual({
        provider_code: 131047,
        provider_title: 'Re-engagement message',
        provider_details: e.details,
        http_status: 400,
        fbtrace_id: e.traceId,
      });
      expectNoToken(e);
    });

    it('131026 → rejected (not retryable), subcode and details carried', async () => {
      await fault({ operation: 'messages', graph_error: { code: 131026, subcode: 2494010, details: 'Receiver is incapable of receiving this message' } });
      const e = await failure(client.sendMessage(creds, text()));
      expect(e.kind).toBe('rejected');
      expect(e.retryable).toBe(false);
      expect(e.code).toBe(131026);
      expect(e.subcode).toBe(2494010);
      expect(e.details).toBe('Receiver is incapable of receiving this message');
      expect(isOutsideWindowError(e)).toBe(false);
      expect(toApiError(e).details).toMatchObject({ provider_code: 131026, provider_subcode: 2494010 });
    });

    it('130429 and 131056 → throttled (retryable)', async () => {
      await fault({ operation: 'messages', graph_error: { code: 130429 } });
      const e = await failure(client.sendMessage(creds, text()));
      expect(e.kind).toBe('throttled');
      expect(e.retryable).toBe(true);
      expect(e.httpStatus).toBe(429);
      expect(toApiError(e).code).toBe('upstream_error');
      await fault({ operation: 'messages', graph_error: { code: 131056 } });
      const e2 = await failure(client.sendMessage(creds, text()));
      expect(e2.kind).toBe('throttled');
      expect(e2.httpStatus).toBe(400);
    });

    it('HTTP 500 with an HTML page → unavailable (retryable)', async () => {
      await fault({ operation: 'messages', http_status: 500 });
      const e = await failure(client.sendMessage(creds, text()));
      expect(e.kind).toBe('unavailable');
      expect(e.retryable).toBe(true);
      expect(e.httpStatus).toBe(500);
      const api = toApiError(e);
      expect(api.status).toBe(502);
      expect(api.code).toBe('upstream_error');
      expect(api.details).toMatchObject({ http_status: 500 });
      expectNoToken(e);
    });

    it('a Graph error 2 (service unavailable, HTTP 503) → unavailable', async () => {
      await fault({ operation: 'messages', graph_error: { code: 2 } });
      const e = await failure(client.sendMessage(creds, text()));
      expect(e.kind).toBe('unavailable');
      expect(e.code).toBe(2);
      expect(e.retryable).toBe(true);
    });

    timingBound('unavailable within about the timeout').it('latency beyond timeoutMs → unavailable within about the timeout', async () => {
      await fault({ operation: 'messages', latency_ms: 1500 });
      const t0 = Date.now();
      const e = await failure(client.sendMessage(creds, text()));
      const took = Date.now() - t0;
      expect(e.kind).toBe('unavailable');
      expect(e.networkCode).toBe('ETIMEDOUT');
      expect(e.retryable).toBe(true);
      expect(e.outcomeUnknown).toBe(true);
      expect(took).toBeGreaterThanOrEqual(280);
      expect(took).toBeLessThan(1000);
      expect(toApiError(e).message).toMatch(/300 ms/);
      expectNoToken(e);
    });
  });
});

describe('CloudApiClient against the simulator', () => {
  describe('errors', () => {
    timingBound('unavailable within 1 s of the timeout').it('no answer at all (held request) → unavailable after the timeout', async () => {
      await fault({ operation: 'templates', timeout: true });
      const t0 = Date.now();
      const e = await failure(client.listTemplates(creds));
      expect(e.kind).toBe('unavailable');
      expect(e.operation).toBe('listTemplates');
      expect(Date.now() - t0).toBeLessThan(1000);
    });

    it('connection refused (closed port) → unavailable, outcome known', async () => {
      const tmp = http.createServer();
      const url = await listen(tmp);
      await closeServer(tmp);
      const c = makeClient({ baseUrl: url });
      const e = await failure(c.sendMessage(creds, text()));
      expect(e.kind).toBe('unavailable');
      expect(e.networkCode).toBe('ECONNREFUSED');
      expect(e.retryable).toBe(true);
      expect(e.outcomeUnknown).toBe(false);
      expect(toApiError(e).code).toBe('upstream_error');
      expectNoToken(e);
    });

    it('non-JSON 200 and redirects → unavailable; redirects are not followed', async () => {
      let hits = 0;
      const seen: { url?: string; headers: http.IncomingHttpHeaders }[] = [];
      const odd = http.createServer((req, res) => {
        hits++;
        seen.push({ url: req.url, headers: req.headers });
        if (req.url?.includes('/media')) {
          res.writeHead(302, { location: 'http://127.0.0.1:9/elsewhere' });
          res.end();
          return;
        }
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html><body>captive portal</body></html>');
      });
      const url = await listen(odd);
      try {
        const c = makeClient({ baseUrl: url });
        const e = await failure(c.sendMessage(creds, text()));
        expect(e.kind).toBe('unavailable');
        expect(e.httpStatus).toBe(200);
        expect(e.outcomeUnknown).toBe(true);
        expect(e.details).toContain('captive portal');
        const r = await failure(c.uploadMedia(creds, { data: PNG, mimeType: 'image/png', filename: 'a.png' }));
        expect(r.kind).toBe('unavailable');
        expect(r.httpStatus).toBe(302);
        expect(hits).toBe(2);
        // The token travels in the Authorization header only; JSON bodies are declared as such.
        expect(seen[0].url).toBe(`/v26.0/${creds.phoneNumberId}/messages`);
        expect(seen[0].headers.authorization).toBe(`Bearer ${creds.accessToken}`);
        expect(seen[0].headers['content-type']).toMatch(/^application\/json/);
        expect(seen[1].headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
        for (const s of seen) expect(s.url).not.toContain(creds.accessToken);
        expectNoToken(e);
      } finally {
        await closeServer(odd);
      }
    });

    it('a send answered compressed is read; an answer over the size limit is unavailable, outcome unknown', async () => {
      const { gzipSync } = await import('node:zlib');
      const seen: http.IncomingHttpHeaders[] = [];
      const answer = JSON.stringify({ messaging_product: 'whatsapp', contacts: [{ input: TO, wa_id: '15551230001' }], messages: [{ id: 'wamid.gz' }] });
      const odd = http.createServer((req, res) => {
        seen.push(req.headers);
        req.resume();
        req.on('end', () => {
          if (seen.length === 1) {
            res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
            res.end(gzipSync(answer));
          } else {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ messages: [{ id: 'wamid.big' }], padding: 'x'.repeat(4096) }));
          }
        });
      });
      const url = await listen(odd);
      try {
        const c = makeClient({ baseUrl: url, maxResponseBytes: 1024 });
        expect(await c.sendMessage(creds, text())).toEqual({ channelMessageId: 'wamid.gz', waId: '15551230001' });
        const e = await failure(c.sendMessage(creds, text()));
        expect(e.kind).toBe('unavailable');
        expect(e.outcomeUnknown).toBe(true);
        expect(e.message).toMatch(/over the size limit/);
        expect(seen[0]['user-agent']).toMatch(/^messaging-service\//);
        expect(seen[0].accept).toBe('application/json');
        expect(seen[0]['content-length']).toBe(String(Buffer.byteLength(JSON.stringify(graphPayload(text())))));
      } finally {
        await closeServer(odd);
      }
    });

    it('an unknown node id is rejected with Graph 100/33', async () => {
      const e = await failure(client.getMedia(creds, '999999999999999'));
      expect(e.kind).toBe('rejected');
      expect(e.code).toBe(100);
      expect(e.subcode).toBe(33);
    });

    it('refuses ids that would change the path', async () => {
      await expect(client.getMedia(creds, '../messages')).rejects.toThrow(TypeError);
      await expect(client.sendMessage({ ...creds, phoneNumberId: '1/2' }, text())).rejects.toThrow(TypeError);
    });
  });
});

describe('CloudApiClient against the simulator', () => {
  describe('media', () => {
    it('upload (Buffer) → get → delete round trip', async () => {
      const { id } = await client.uploadMedia(creds, { data: PNG, mimeType: 'image/png', filename: 'dot.png' });
      expect(id).toMatch(/^\d+$/);
      const info = await client.getMedia(creds, id);
      expect(info).toMatchObject({ id, mime_type: 'image/png', file_size: PNG.length });
      expect(info.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(info.url).toMatch(/^http/);
      expect(info.url).not.toContain(creds.accessToken);
      // The download URL needs the same token (Bearer).
      const dl = await fetch(info.url, { headers: { authorization: `Bearer ${creds.accessToken}` } });
      expect(Buffer.from(await dl.arrayBuffer()).equals(PNG)).toBe(true);
      await client.deleteMedia(creds, id);
      const e = await failure(client.getMedia(creds, id));
      expect(e.kind).toBe('rejected');
    });

    it('uploads a stream, with and without a declared size', async () => {
      const body = Buffer.from('plain text document\n'.repeat(1000));
      const a = await client.uploadMedia(creds, { data: Readable.from([body.subarray(0, 7000), body.subarray(7000)]), mimeType: 'text/plain', filename: 'notes.txt', size: body.length });
      expect((await client.getMedia(creds, a.id)).file_size).toBe(body.length);
      const b = await client.uploadMedia(creds, { data: Readable.from([body]), mimeType: 'text/plain', filename: 'notizen-ä.txt' });
      expect((await client.getMedia(creds, b.id)).file_size).toBe(body.length);
    });

    it('a stream whose length differs from size is a caller error, not a ChannelError', async () => {
      const e = await client
        .uploadMedia(creds, { data: Readable.from([Buffer.alloc(10)]), mimeType: 'text/plain', filename: 'x.txt', size: 20 })
        .catch((x: unknown) => x);
      expect(e).toBeInstanceOf(TypeError);
      expect(e).not.toBeInstanceOf(ChannelError);
    });

    it('an unsupported type is rejected upstream', async () => {
      const e = await failure(client.uploadMedia(creds, { data: Buffer.from('x'), mimeType: 'application/x-unknown', filename: 'x.bin' }));
      expect(e.kind).toBe('rejected');
      expect(e.operation).toBe('uploadMedia');
      expect(isTemplateRejection(e)).toBe(false);
    });
  });
});

describe('CloudApiClient against the simulator', () => {
  describe('resumable upload and templates', () => {
    it('uploadHeaderSample yields a handle a media-header template accepts', async () => {
      const { handle } = await client.uploadHeaderSample(creds, { data: PNG, fileName: 'dot.png', fileType: 'image/png' });
      expect(handle).toMatch(/^4::/);
      const t = await client.createTemplate(creds, {
        name: `promo_${Date.now()}`,
        language: 'en_US',
        category: 'MARKETING',
        components: [
          { type: 'HEADER', format: 'IMAGE', example: { header_handle: [handle] } },
          { type: 'BODY', text: 'New arrivals this week.' },
        ],
      });
      expect(t).toMatchObject({ status: 'PENDING', category: 'MARKETING' });
      // A handle is good for one template only.
      const e = await failure(
        client.createTemplate(creds, {
          name: `promo_again_${Date.now()}`,
          language: 'en_US',
          category: 'MARKETING',
          components: [{ type: 'HEADER', format: 'IMAGE', example: { header_handle: [handle] } }, { type: 'BODY', text: 'Again.' }],
        }),
      );
      expect(e.kind).toBe('rejected');
      expect(isTemplateRejection(e)).toBe(true);
    });

    it('resumable upload in two chunks from a stream', async () => {
      const { sessionId } = await client.createUploadSession(creds, { fileName: 'dot.png', fileLength: PNG.length, fileType: 'image/png' });
      expect(sessionId).toMatch(/^upload:/);
      const first = await client.uploadToSession(creds, sessionId, PNG.subarray(0, 20), 0);
      expect(first).toEqual({ fileOffset: 20 });
      const second = await client.uploadToSession(creds, sessionId, Readable.from([PNG.subarray(20)]), 20, PNG.length - 20);
      expect(second.handle).toMatch(/^4::/);
    });

    it('a wrong offset is rejected', async () => {
      const { sessionId } = await client.createUploadSession(creds, { fileName: 'dot.png', fileLength: PNG.length, fileType: 'image/png' });
      const e = await failure(client.uploadToSession(creds, sessionId, PNG, 5));
      expect(e.kind).toBe('rejected');
      expect(e.operation).toBe('uploadToSession');
    });

    it('create → list → duplicate → delete', async () => {
      const name = `welcome_${Date.now()}`;
      const created = await client.createTemplate(creds, {
        name,
        language: 'en_US',
        category: 'UTILITY',
        components: [{ type: 'BODY', text: 'Welcome {{1}}!', example: { body_text: [['Ann']] } }, { type: 'FOOTER', text: 'Reply STOP to opt out' }],
      });
      expect(created.id).toMatch(/^\d+$/);
      expect(created.status).toBe('PENDING');

      const listed = await client.listTemplates(creds, { name });
      expect(listed).toHaveLength(1);
      expect(listed[0]).toMatchObject({ id: created.id, name, language: 'en_US', status: 'PENDING', category: 'UTILITY' });
      expect(Array.isArray(listed[0].components)).toBe(true);

      const dup = await failure(
        client.createTemplate(creds, { name, language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Welcome!' }] }),
      );
      expect(dup.kind).toBe('rejected');
      expect(isTemplateExists(dup)).toBe(true);
      expect(isTemplateRejection(dup)).toBe(false);
      expect(dup.title).toBe('Message template already exists');

      const invalid = await failure(
        client.createTemplate(creds, { name: 'Bad Name', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'x' }] }),
      );
      expect(isTemplateRejection(invalid)).toBe(true);
      expect(toInvalidTemplateError(invalid).message).toMatch(/Invalid template name/);

      await client.deleteTemplate(creds, { name, hsmId: created.id });
      expect(await client.listTemplates(creds, { name })).toHaveLength(0);
      const gone = await failure(client.deleteTemplate(creds, { name }));
      expect(gone.kind).toBe('rejected');
    });

    it('listTemplates follows pages up to the limit', async () => {
      const prefix = `paged_${Date.now()}`;
      for (let i = 0; i < 5; i++) {
        await client.createTemplate(creds, { name: `${prefix}_${i}`, language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: `n ${i}` }] });
      }
      expect(await client.listTemplates(creds, { name: prefix })).toHaveLength(5);
      expect(await client.listTemplates(creds, { name: prefix, limit: 3 })).toHaveLength(3);
    });
  });

  it('never logged the access token', () => {
    expect(log.lines.length).toBeGreaterThan(0);
    expect(log.lines.join('\n')).not.toContain(creds.accessToken);
  });
});
