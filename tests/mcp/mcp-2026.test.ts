/**
 * MCP 2026-07-28 on /mcp beside the handshake revisions (issue 67 item 4): no initialize, the
 * version in the MCP-Protocol-Version header and in each request's `_meta`, `Mcp-Method`/`Mcp-Name`
 * mirroring the body, `server/discover`, caching hints on lists, -32022 for a version not spoken,
 * and the request's id in every error about a request that had one. Bad input is a JSON-RPC error
 * with a 4xx, never a 500.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { connectedProject, type TestApp, useTestApp } from '../support/app.js';
import { decodeHeaderValue } from '../../http/mcp/modern.js';

let t: TestApp;
let bearer: string;
let projectId: string;
useTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } }, (app) => (t = app));
beforeAll(async () => {
  ({ projectId, secret: bearer } = await connectedProject(t, 'Modern', ['contacts:read', 'conversations:read']));
});

const V = '2026-07-28';
const META = {
  'io.modelcontextprotocol/protocolVersion': V,
  'io.modelcontextprotocol/clientInfo': { name: 'modern-test', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

/** A conformant 2026-07-28 request; `headers` replace (or, set to null, drop) the standard ones. */
function modern(method: string, params: Record<string, unknown> = {}, opts: { id?: unknown; headers?: Record<string, string | null>; meta?: unknown } = {}) {
  const name = method === 'tools/call' ? params.name : undefined;
  const standard: Record<string, string | null> = {
    'MCP-Protocol-Version': V,
    'Mcp-Method': method,
    ...(typeof name === 'string' ? { 'Mcp-Name': name } : {}),
    ...opts.headers,
  };
  let r = request(t.app).post('/mcp').set('Accept', 'application/json, text/event-stream').set('Authorization', `Bearer ${bearer}`);
  for (const [k, v] of Object.entries(standard)) if (v !== null) r = r.set(k, v);
  const body: Record<string, unknown> = { jsonrpc: '2.0', method, params: { ...params, ...(opts.meta === null ? {} : { _meta: opts.meta ?? META }) } };
  if (!('id' in opts)) body.id = 7;
  else if (opts.id !== undefined) body.id = opts.id;
  return r.send(body);
}

describe('MCP 2026-07-28: stateless requests', () => {
  it('When server/discover is asked with no initialize before it, then it lists the versions (2026-07-28 and the legacy ones), the tools capability, the instructions, caching hints and serverInfo in _meta', async () => {
    const res = await modern('server/discover', {}, { id: 'd-1' });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe('d-1');
    const r = res.body.result;
    expect(r.resultType).toBe('complete');
    expect(r.supportedVersions).toEqual(expect.arrayContaining([V, '2025-11-25', '2025-06-18', '2025-03-26']));
    expect(r.supportedVersions[0]).toBe(V);
    expect(r.capabilities).toEqual({ tools: { listChanged: false } });
    expect(r.instructions).toContain('callTool');
    expect(r).toMatchObject({ ttlMs: 3_600_000, cacheScope: 'public' });
    expect(r._meta[SERVER_INFO]).toMatchObject({ name: 'service-api', version: '1' });
  });

  it('When tools/list is asked, then the tools the credential may call come with ttlMs and cacheScope "private" (the list follows the token\'s scopes)', async () => {
    const res = await modern('tools/list');
    expect(res.status).toBe(200);
    const r = res.body.result;
    expect(r).toMatchObject({ resultType: 'complete', ttlMs: 300_000, cacheScope: 'private' });
    expect(Number.isInteger(r.ttlMs) && r.ttlMs >= 0).toBe(true);
    const names = r.tools.map((x: { name: string }) => x.name);
    expect(names).toContain('listContacts');
    expect(names).not.toContain('sendMessage');
    expect(r._meta[SERVER_INFO].name).toBe('service-api');
  });

  it('When a tool is called, then the result is the legacy era\'s (the operation\'s data) with resultType "complete"', async () => {
    const res = await modern('tools/call', { name: 'ping', arguments: {} });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 7, result: { resultType: 'complete', structuredContent: { ok: true, projectId } } });
    expect(res.body.result._meta[SERVER_INFO]).toBeDefined();
  });

  it('When _meta omits clientInfo, then the request is served (clientInfo is a SHOULD)', async () => {
    const { 'io.modelcontextprotocol/clientInfo': _ci, ...meta } = META;
    const res = await modern('server/discover', {}, { meta });
    expect(res.status).toBe(200);
    expect(res.body.result.supportedVersions).toContain(V);
  });

  it('When a tool the token may not call is called, then the tool error is as in the legacy era and the id is the request\'s', async () => {
    const res = await modern('tools/call', { name: 'sendMessage', arguments: { body: { to: '+15550001111', type: 'text', text: { body: 'hi' } } } }, { id: 'c-9' });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe('c-9');
    expect(res.body.result.isError).toBe(true);
    expect(JSON.parse(res.body.result.content[0].text).error.code).toBe('insufficient_scope');
  });

  it('When an unknown tool is called, then -32602 with the request\'s id', async () => {
    const res = await modern('tools/call', { name: 'noSuchTool', arguments: {} }, { id: 41 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: 41, error: { code: -32602 } });
    expect(res.body.error.message).toContain('Unknown tool');
  });

  it('When Mcp-Name is Base64-encoded as the transport says, then it is decoded before it is compared', async () => {
    const res = await modern('tools/call', { name: 'ping', arguments: {} }, { headers: { 'Mcp-Name': `=?base64?${Buffer.from('ping').toString('base64')}?=` } });
    expect(res.status).toBe(200);
    expect(res.body.result.structuredContent.ok).toBe(true);
    expect(decodeHeaderValue('=?base64?SGVsbG8sIOS4lueVjA==?=')).toBe('Hello, 世界');
    expect(decodeHeaderValue('=?base64?not base64?=')).toBeUndefined();
    expect(decodeHeaderValue('caf\u00e9')).toBeUndefined();
  });

  it('When a Mcp-Session-Id is sent at 2026-07-28, then it is ignored (no sessions in this revision)', async () => {
    const res = await modern('tools/list', {}, { headers: { 'Mcp-Session-Id': 'abc' } });
    expect(res.status).toBe(200);
    expect(res.headers['mcp-session-id']).toBeUndefined();
  });

  it('When a notification is posted, then 202 with no body', async () => {
    const res = await modern('notifications/cancelled', { requestId: 1 }, { id: undefined });
    expect(res.status).toBe(202);
    expect(res.text).toBe('');
  });
});

describe('MCP 2026-07-28: headers against the body (400 -32020 HeaderMismatch)', () => {
  const cases: Array<[string, () => ReturnType<typeof modern>]> = [
    ['Mcp-Method names another method', () => modern('tools/list', {}, { headers: { 'Mcp-Method': 'prompts/list' } })],
    ['Mcp-Method differs only in case (values are case-sensitive)', () => modern('tools/list', {}, { headers: { 'Mcp-Method': 'TOOLS/LIST' } })],
    ['Mcp-Method is missing', () => modern('tools/list', {}, { headers: { 'Mcp-Method': null } })],
    ['Mcp-Name names another tool', () => modern('tools/call', { name: 'ping', arguments: {} }, { headers: { 'Mcp-Name': 'listContacts' } })],
    ['Mcp-Name is missing on tools/call', () => modern('tools/call', { name: 'ping', arguments: {} }, { headers: { 'Mcp-Name': null } })],
    ['Mcp-Name is Base64 of another name', () => modern('tools/call', { name: 'ping', arguments: {} }, { headers: { 'Mcp-Name': `=?base64?${Buffer.from('pong').toString('base64')}?=` } })],
    ['MCP-Protocol-Version is missing though _meta names 2026-07-28', () => modern('tools/list', {}, { headers: { 'MCP-Protocol-Version': null } })],
    ['MCP-Protocol-Version names another version than _meta', () => modern('tools/list', {}, { headers: { 'MCP-Protocol-Version': '2025-11-25' } })],
    ['_meta names an unknown version under a 2026-07-28 header', () => modern('server/discover', {}, { meta: { ...META, 'io.modelcontextprotocol/protocolVersion': 'v999.0.0' } })],
  ];
  for (const [what, send] of cases) {
    it(`When ${what}, then 400 -32020 with the request's id and nothing runs`, async () => {
      const res = await send();
      expect({ status: res.status, code: res.body.error?.code, id: res.body.id }).toEqual({ status: 400, code: -32020, id: 7 });
      expect(res.body.error.message).toMatch(/^Header mismatch: /);
    });
  }

  it('When Mcp-Name carries surrounding spaces, then they are not part of the value (RFC 9110 field parsing)', async () => {
    const res = await modern('tools/call', { name: 'ping', arguments: {} }, { headers: { 'Mcp-Name': '  ping  ' } });
    expect(res.status).toBe(200);
  });
});

describe('MCP 2026-07-28: versions, _meta and methods', () => {
  it('When the version is one this server does not speak, then 400 -32022 with data {supported, requested} and the request\'s id', async () => {
    for (const version of ['v999.0.0', '2027-01-01']) {
      const res = await modern('server/discover', {}, { id: 301, headers: { 'MCP-Protocol-Version': version }, meta: { ...META, 'io.modelcontextprotocol/protocolVersion': version } });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 301, error: { code: -32022, message: 'Unsupported protocol version', data: { requested: version } } });
      const discovered = (await modern('server/discover')).body.result.supportedVersions;
      expect(res.body.error.data.supported).toEqual(discovered);
    }
  });

  it('When a legacy-style request (no _meta) names an unknown version in the header, then 400 -32022 with its id, not the SDK\'s -32000 with id null', async () => {
    const res = await request(t.app).post('/mcp').set('Accept', 'application/json, text/event-stream').set('Authorization', `Bearer ${bearer}`)
      .set('Mcp-Protocol-Version', '1900-01-01').send({ jsonrpc: '2.0', id: 5, method: 'tools/list' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ id: 5, error: { code: -32022, data: { requested: '1900-01-01' } } });
  });

  const metaCases: Array<[string, unknown]> = [
    ['no _meta', null],
    ['_meta without protocolVersion', { 'io.modelcontextprotocol/clientCapabilities': {} }],
    ['_meta without clientCapabilities', { 'io.modelcontextprotocol/protocolVersion': V }],
    ['clientCapabilities that is not an object', { ...META, 'io.modelcontextprotocol/clientCapabilities': 'all' }],
    ['_meta that is not an object', 'x'],
  ];
  for (const [what, meta] of metaCases) {
    it(`When a request has ${what}, then 400 -32602 with its id`, async () => {
      const res = await modern('server/discover', {}, { id: 101, meta });
      expect({ status: res.status, code: res.body.error?.code, id: res.body.id }).toEqual({ status: 400, code: -32602, id: 101 });
    });
  }

  it('When a removed or unknown method is called (initialize, ping, logging/setLevel, resources/subscribe, unknown/method), then 404 -32601 with the request\'s id', async () => {
    for (const method of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe', 'prompts/list', 'unknown/method']) {
      const res = await modern(method, {}, { id: 500 });
      expect({ method, status: res.status, code: res.body.error?.code, id: res.body.id }).toEqual({ method, status: 404, code: -32601, id: 500 });
    }
  });

  it('When the body is not a request (no method, a null id, params not an object, a batch), then 400 -32600/-32602 and never a 500', async () => {
    const post = (body: unknown) => request(t.app).post('/mcp').set('Accept', 'application/json, text/event-stream').set('Authorization', `Bearer ${bearer}`)
      .set('MCP-Protocol-Version', V).set('Mcp-Method', 'tools/list').send(body as object);
    const noMethod = await post({ jsonrpc: '2.0', id: 3, params: { _meta: META } });
    expect(noMethod.status).toBe(400);
    expect(noMethod.body).toMatchObject({ id: 3, error: { code: -32600 } });
    const nullId = await post({ jsonrpc: '2.0', id: null, method: 'tools/list', params: { _meta: META } });
    expect(nullId.status).toBe(400);
    expect(nullId.body).toMatchObject({ id: null, error: { code: -32600 } });
    const badParams = await post({ jsonrpc: '2.0', id: 4, method: 'tools/list', params: [1] });
    expect(badParams.status).toBe(400);
    expect(badParams.body).toMatchObject({ id: 4, error: { code: -32602 } });
    const batch = await post([{ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }]);
    expect(batch.status).toBe(400);
    expect(batch.body.error.code).toBe(-32600);
    const notJson = await request(t.app).post('/mcp').set('Authorization', `Bearer ${bearer}`).set('MCP-Protocol-Version', V).set('Content-Type', 'application/json').send('{"jsonrpc":');
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe(-32700);
  });

  it('When no bearer is sent at 2026-07-28, then 401 with the protected-resource metadata, as in the legacy era', async () => {
    const res = await request(t.app).post('/mcp').set('MCP-Protocol-Version', V).set('Mcp-Method', 'server/discover').send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: META } });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toContain('resource_metadata=');
  });
});

describe('the legacy revisions beside it', () => {
  it('When a 2025-11-25 client connects with the SDK (initialize, then tools/list), then it works as before', async () => {
    const client = new Client({ name: 'legacy', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', t.baseUrl), { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } }));
    expect(client.getServerVersion()?.name).toBe('service-api');
    const tools = await client.listTools();
    expect(tools.tools.map((x) => x.name)).toContain('listContacts');
    expect((tools as Record<string, unknown>).resultType).toBeUndefined();
    await client.close();
  });

  it('When a request without the header carries a handshake version in _meta, then it is a legacy request (the SDK answers it); a 2026-07-28 one without the header is -32020', async () => {
    const post = (version: string) => request(t.app).post('/mcp').set('Accept', 'application/json, text/event-stream').set('Authorization', `Bearer ${bearer}`)
      .send({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': version } } });
    const legacy = await post('2025-03-26');
    expect(legacy.status).toBe(200);
    expect(legacy.body.result.tools.length).toBeGreaterThan(0);
    const modern = await post(V);
    expect(modern.status).toBe(400);
    expect(modern.body).toMatchObject({ id: 9, error: { code: -32020 } });
  });

  it('When a legacy request carries a Mcp-Session-Id, then 404 as before, now with the request\'s id', async () => {
    const res = await request(t.app).post('/mcp').set('Accept', 'application/json, text/event-stream').set('Authorization', `Bearer ${bearer}`)
      .set('Mcp-Protocol-Version', '2025-11-25').set('Mcp-Session-Id', 'abc').send({ jsonrpc: '2.0', id: 12, method: 'tools/list' });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ id: 12, error: { code: -32001 } });
  });

  it('When a legacy tools/list or tools/call skips the SDK (http/mcp/direct.ts), then its answer is the SDK\'s: the same as inside a 2025-03-26 batch, which the SDK answers', async () => {
    const post = (body: unknown) => request(t.app).post('/mcp').set('Accept', 'application/json, text/event-stream').set('Authorization', `Bearer ${bearer}`)
      .set('Mcp-Protocol-Version', '2025-03-26').send(body as object);
    for (const message of [
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: 'u', method: 'tools/call', params: { name: 'noSuchTool', arguments: {} } },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'listContacts', arguments: { limit: 'x' } } },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'callTool', arguments: { nope: 1 } } },
    ]) {
      const single = await post(message);
      const batch = await post([message]);
      expect(single.status).toBe(200);
      expect(single.headers['content-type']).toBe('application/json');
      expect(batch.status).toBe(200);
      // The SDK answers a batch of one with the one answer, not an array.
      const sdk = Array.isArray(batch.body) ? batch.body[0] : batch.body;
      // A tool error's text names the operation's request id, which differs per call.
      const strip = (m: unknown) => JSON.parse(JSON.stringify(m).replace(/\\"request_id\\":\\"[^\\"]*\\"/g, '\\"request_id\\":\\"-\\"'));
      expect(strip(single.body)).toEqual(strip(sdk));
    }
  });

  for (const version of ['2025-11-25', '2025-06-18', '2025-03-26']) {
    it(`When a ${version} request (header, no _meta) lists tools, then the SDK answers it without 2026-07-28's fields`, async () => {
      const res = await request(t.app).post('/mcp').set('Accept', 'application/json, text/event-stream').set('Authorization', `Bearer ${bearer}`)
        .set('Mcp-Protocol-Version', version).send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      expect(res.status).toBe(200);
      expect(res.body.result.tools.length).toBeGreaterThan(0);
      expect(res.body.result.ttlMs).toBeUndefined();
    });
  }
});
