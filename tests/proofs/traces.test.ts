/**
 * Traces (docs/traces.md): the service as a real process, started as `npm run start:dev` starts it
 * (the tracing bootstrap first), exporting over OTLP/HTTP to a collector of the test's own. A send
 * is one trace: the request's server span, the PostgreSQL statements under it, and the Graph call
 * (our span by operation, with the HTTP client call to the simulator inside it); its log lines name
 * the request id and the trace id, also one written deep under the request (the Graph client's). An endpoint that is not a URL stops the start, naming the setting.
 *
 * @shared The service and a collector of its own: it kills nothing and measures no time.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { createSimulator, type Simulator } from '../../simulator/app.js';
import { createScratchDatabase } from '../support/db.js';
import { ServiceProcess, eventually, stopAll } from '../support/service-process.js';

/** One span as OTLP/JSON carries it, with its attributes flattened. */
interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}
const SERVER = 2;
const CLIENT = 3;

/** An OTLP/HTTP collector: keeps every span posted to /v1/traces (JSON). */
class Collector {
  readonly spans: Span[] = [];
  readonly contentTypes = new Set<string>();
  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<Collector> {
    let self: Collector | undefined;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        self!.contentTypes.add(String(req.headers['content-type']));
        if (req.url === '/v1/traces') self!.take(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.setHeader('content-type', 'application/json');
        res.end('{}');
      });
    });
    self = new Collector(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return self;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private take(body: { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }> }> }): void {
    for (const rs of body.resourceSpans ?? [])
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? []) {
          const attributes: Record<string, unknown> = {};
          for (const a of (s.attributes as Array<{ key: string; value: Record<string, unknown> }>) ?? []) attributes[a.key] = Object.values(a.value)[0];
          this.spans.push({ traceId: String(s.traceId), spanId: String(s.spanId), parentSpanId: s.parentSpanId ? String(s.parentSpanId) : undefined, name: String(s.name), kind: Number(s.kind), attributes });
        }
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

let scratch: { url: string; drop(): Promise<void> } | undefined;
let sim: Simulator;
let simServer: http.Server;
let simUrl: string;
let collector: Collector;
let service: ServiceProcess;
const adminToken = 'adm_traces_' + randomBytes(16).toString('hex');
const encryptionKey = randomBytes(32).toString('hex');

beforeAll(async () => {
  scratch = await createScratchDatabase('traces');
  sim = createSimulator({ autoStatusDelaysMs: null, templateAutoDecisionMs: 50 });
  simServer = http.createServer(sim.app);
  await new Promise<void>((r) => simServer.listen(0, '127.0.0.1', () => r()));
  simUrl = `http://127.0.0.1:${(simServer.address() as AddressInfo).port}`;
  collector = await Collector.start();
  service = await ServiceProcess.start({
    databaseUrl: scratch.url,
    adminToken,
    encryptionKey,
    simulatorUrl: simUrl,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, LOG_LEVEL: 'info' },
  });
}, 180_000);

afterAll(async () => {
  await stopAll();
  await collector?.close();
  await sim?.close();
  simServer?.closeAllConnections();
  await new Promise<void>((r) => (simServer ? simServer.close(() => r()) : r()));
  await scratch?.drop().catch(() => undefined);
}, 60_000);

describe('traces over OTLP', () => {
  it('When a message is sent, then one trace holds the request, its statements and the Graph call, and its log line names the request id and the trace id', async () => {
    const admin = (method: 'get' | 'post', path: string, body?: object) =>
      (body ? request(service.url)[method](path).send(body) : request(service.url)[method](path)).set('Authorization', `Bearer ${adminToken}`).expect((r) => expect(r.status).toBeLessThan(300));
    const project = (await admin('post', '/admin/projects', { name: 'traced' })).body.data.project;
    const key = (await admin('post', `/admin/projects/${project.id}/keys`, { name: 'k', scopes: ['messages:send'] })).body.data.secret as string;
    const pnid = (await admin('get', `/admin/projects/${project.id}/channel`)).body.data.channel.phone_number_id as string;
    await request(simUrl).post('/_sim/inbound').send({ phone_number_id: pnid, from: '14155550123', name: 'Ada', text: 'hi' }).expect(200);

    const requestId = 'req_traced_' + randomBytes(6).toString('hex');
    const sent = await request(service.url)
      .post('/v1/messages')
      .set('Authorization', `Bearer ${key}`)
      .set('X-Request-Id', requestId)
      .send({ type: 'text', phone: '+14155550123', content: 'traced' });
    expect(sent.status).toBe(200);
    expect(sent.headers['x-request-id']).toBe(requestId);

    const server = await eventually(
      async () => collector.spans.find((s) => s.kind === SERVER && s.attributes['request.id'] === requestId),
      (s) => s !== undefined,
      15_000,
      'the server span of the send at the collector',
    );
    const traceId = server!.traceId;
    // Its children are exported when they end, possibly in a later batch than the server span.
    const trace = await eventually(
      async () => collector.spans.filter((s) => s.traceId === traceId),
      (spans) => spans.some((s) => s.name === 'graph sendMessage') && spans.some((s) => s.kind === CLIENT && !('db.system' in s.attributes)),
      15_000,
      'the Graph call in the send\'s trace',
    );
    const names = trace.map((s) => s.name);
    expect(server!.name).toMatch(/^POST/);
    expect(server!.attributes['http.route'] ?? server!.name).toMatch(/messages/);

    // The statements: pg client spans with their SQL text (never bound values).
    const statements = trace.filter((s) => s.attributes['db.system'] === 'postgresql' || s.attributes['db.system.name'] === 'postgresql');
    expect(statements.length).toBeGreaterThanOrEqual(2);
    const texts = statements.map((s) => String(s.attributes['db.statement'] ?? s.attributes['db.query.text'] ?? ''));
    expect(texts.some((t) => /insert|update/i.test(t))).toBe(true);
    expect(texts.join('\n')).not.toContain('traced'); // the message's content is a bound value, never in a span

    // The Graph call: our span by operation, and inside it the HTTP call to the channel.
    const graph = trace.find((s) => s.name === 'graph sendMessage')!;
    expect(graph.attributes['graph.operation']).toBe('sendMessage');
    const outbound = trace.find((s) => s.kind === CLIENT && s.parentSpanId === graph.spanId);
    expect(outbound).toBeDefined();
    // Everything of the trace hangs from the request's server span.
    const ids = new Set(trace.map((s) => s.spanId));
    for (const s of trace) if (s !== server) expect({ span: s.name, parentKnown: ids.has(s.parentSpanId ?? '') }).toEqual({ span: s.name, parentKnown: true });
    console.log(`one send → trace ${traceId}: ${trace.length} spans (${statements.length} statements): ${names.join(', ')}`);

    // The log: the request's line carries both ids.
    const line = await eventually(
      async () => (await service.log()).split('\n').find((l) => l.includes(requestId) && l.includes('sendMessage')),
      (l) => l !== undefined,
      5_000,
      'the send\'s access log line',
    );
    expect(line).toContain(`request_id=${requestId}`);
    expect(line).toContain(`trace_id=${traceId}`);
    expect([...collector.contentTypes]).toEqual(['application/json']);
  }, 60_000);

  it('When the channel refuses a send, then the Graph client\'s warning, written deep under the request, names the request id and the trace id', async () => {
    const admin = (method: 'get' | 'post', path: string, body?: object) =>
      (body ? request(service.url)[method](path).send(body) : request(service.url)[method](path)).set('Authorization', `Bearer ${adminToken}`).expect((r) => expect(r.status).toBeLessThan(300));
    const project = (await admin('post', '/admin/projects', { name: 'refused' })).body.data.project;
    const key = (await admin('post', `/admin/projects/${project.id}/keys`, { name: 'k', scopes: ['messages:send'] })).body.data.secret as string;
    const pnid = (await admin('get', `/admin/projects/${project.id}/channel`)).body.data.channel.phone_number_id as string;
    await request(simUrl).post('/_sim/inbound').send({ phone_number_id: pnid, from: '14155550124', name: 'Bo', text: 'hi' }).expect(200);
    await request(simUrl).post('/_sim/faults').send({ phone_number_id: pnid, operation: 'messages', graph_error: { code: 131047 } }).expect(201);

    const requestId = 'req_refused_' + randomBytes(6).toString('hex');
    const refused = await request(service.url).post('/v1/messages').set('Authorization', `Bearer ${key}`).set('X-Request-Id', requestId).send({ type: 'text', phone: '+14155550124', content: 'no' });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    const server = await eventually(
      async () => collector.spans.find((s) => s.kind === SERVER && s.attributes['request.id'] === requestId),
      (s) => s !== undefined,
      15_000,
      'the server span of the refused send',
    );
    const warning = await eventually(
      async () => (await service.log()).split('\n').find((l) => l.includes('cloud api call failed') && l.includes(requestId)),
      (l) => l !== undefined,
      5_000,
      'the Graph client\'s warning with the request id',
    );
    expect(warning).toContain(`trace_id=${server!.traceId}`);
  }, 60_000);

  it('When OTEL_EXPORTER_OTLP_ENDPOINT is not a URL, then the service does not start and names the setting', async () => {
    const failed = await ServiceProcess.start({ databaseUrl: scratch!.url, adminToken, encryptionKey, simulatorUrl: simUrl, env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' } }).then(
      () => 'started',
      (e: Error) => e.message,
    );
    expect(failed).toContain('OTEL_EXPORTER_OTLP_ENDPOINT must be the http(s) URL');
  }, 60_000);
});
