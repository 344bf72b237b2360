/**
 * The MCP server at /mcp, driven by the SDK's own client over Streamable HTTP: the tools come from
 * the contract and only those the credential may call are listed; a tool call is its operation's
 * HTTP call (scopes, project selection, validation, the Idempotency-Key rule, the rate limit, the
 * spec's codes); bad input on the wire gets a clear error and stores nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { inbound } from '../support/inbound.js';

let t: TestApp;
let mcpUrl: URL;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
  mcpUrl = new URL('/mcp', t.baseUrl);
});
afterAll(async () => {
  await t.close();
});

async function connect(bearer: string, headers: Record<string, string> = {}) {
  const client = new Client({ name: 'mcp-server-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: { Authorization: `Bearer ${bearer}`, ...headers } } }));
  return client;
}

/** The spec's error carried by a tool error. */
function toolError(result: any): { code: string; message: string; request_id?: string } {
  expect(result.isError).toBe(true);
  return JSON.parse(result.content[0].text).error;
}

const rpc = (bearer: string | undefined, body: unknown, headers: Record<string, string> = {}) => {
  const r = request(t.app).post('/mcp').set('Accept', 'application/json, text/event-stream').set(headers);
  if (bearer) r.set('Authorization', `Bearer ${bearer}`);
  return typeof body === 'string' ? r.set('Content-Type', 'application/json').send(body) : r.send(body as object);
};

describe('discovery and the bearer', () => {
  it('When /mcp is called without a bearer, then 401 names the protected-resource metadata (RFC 9728)', async () => {
    const res = await rpc(undefined, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe(`Bearer resource_metadata="${t.config.publicBaseUrl}/.well-known/oauth-protected-resource/mcp", scope="conversations:read contacts:read templates:read"`);
    expect(res.body.error.code).toBe('api_key_required');
  });

  it('When the token is unknown, then 401 invalid_token with the error in WWW-Authenticate', async () => {
    const res = await rpc('mcp_at_' + 'x'.repeat(40), { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    expect(res.body.error.code).toBe('invalid_token');
  });

  it('When a client initializes, then the server answers at the current protocol revision, with no session', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    const res = await rpc(key.secret, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    expect(res.status).toBe(200);
    expect(res.body.result.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
    expect(res.body.result.capabilities.tools).toBeDefined();
    expect(res.headers['mcp-session-id']).toBeUndefined();
  });
});

describe('tools from the contract', () => {
  it('When a read-only key lists tools, then it sees the operations its scopes allow, with schemas and annotations from the contract', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read', 'conversations:read', 'webhooks:manage']);
    const client = await connect(key.secret);
    const { tools } = await client.listTools();
    const names = tools.map((x) => x.name);
    expect(names).toEqual(expect.arrayContaining(['ping', 'listProjects', 'listContacts', 'getContact', 'listConversations', 'getMessage', 'deleteWebhook']));
    // Not callable with these scopes: not listed. The contract's own document is never a tool.
    for (const hidden of ['sendMessage', 'updateContact', 'createBroadcast', 'getOpenApiDocument']) expect(names).not.toContain(hidden);
    const listContacts = tools.find((x) => x.name === 'listContacts')!;
    expect(listContacts.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true });
    expect(Object.keys(listContacts.inputSchema.properties!)).toEqual(expect.arrayContaining(['limit', 'cursor', 'phone', 'project']));
    // No output schema in the list (tests/mcp/mcp-tool-list.test.ts): the result carries the data itself.
    expect(listContacts.outputSchema).toBeUndefined();
    expect(listContacts.description).toContain('contacts:read');
    expect(tools.find((x) => x.name === 'deleteWebhook')!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    await client.close();
  });

  it('When a tool is called, then its result is the operation\'s data, as structured content and as text', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    const client = await connect(key.secret);
    const ping = await client.callTool({ name: 'ping', arguments: {} });
    expect(ping.isError).toBeFalsy();
    expect(ping.structuredContent).toEqual({ ok: true, projectId: p.id, scopes: ['contacts:read'] });
    const contacts = await client.callTool({ name: 'listContacts', arguments: { limit: 5 } });
    expect(contacts.structuredContent).toMatchObject({ contacts: [] });
    await client.close();
  });

  it('When a tool the scopes do not allow is called anyway, then a tool error insufficient_scope with its request id', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    const client = await connect(key.secret);
    const err = toolError(await client.callTool({ name: 'updateContact', arguments: { id: '1', body: { name: 'x' } } }));
    expect(err.code).toBe('insufficient_scope');
    expect(err.request_id).toMatch(/^req_/);
    await client.close();
  });
});

describe('sends through a tool', () => {
  it('When an agent sends with an Idempotency-Key, then the customer gets one message and the retry returns the same id', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['messages:send', 'conversations:read']);
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: p.id } });
    await inbound(t, channel.phoneNumberId, '14155550171', 'hello');
    const client = await connect(key.secret);
    const args = { idempotency_key: 'mcp-order-1', body: { type: 'text', phone: '+14155550171', content: 'Your order shipped' } };
    const first = await client.callTool({ name: 'sendMessage', arguments: args });
    const again = await client.callTool({ name: 'sendMessage', arguments: args });
    expect(first.structuredContent).toEqual({ id: expect.stringMatching(/^wamid\./), status: 'sent' });
    expect(again.structuredContent).toEqual(first.structuredContent);
    const sent = await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${channel.phoneNumberId}&to=14155550171`);
    expect(JSON.stringify(sent.body).split('Your order shipped').length - 1).toBe(1);
    // The same key with another body is the spec's refusal, as over HTTP.
    const conflict = toolError(await client.callTool({ name: 'sendMessage', arguments: { ...args, body: { ...args.body, content: 'other' } } }));
    expect(conflict.code).toBe('idempotency_key_mismatch');
    const read = await client.callTool({ name: 'getMessage', arguments: { id: (first.structuredContent as any).id } });
    expect(read.structuredContent).toMatchObject({ direction: 'outbound', type: 'text' });
    await client.close();
  });
});

describe('projects of a connection', () => {
  it('When a connection reaches two projects, then reads use the default, writes need a project, and an unattached project is refused', async () => {
    const a = await t.admin.project('A');
    const b = await t.admin.project('B');
    const stranger = await t.admin.project('C');
    const con = await t.admin.connection([
      { projectId: a.id, scopes: ['contacts:read', 'contacts:write'] },
      { projectId: b.id, scopes: ['contacts:read', 'contacts:write', 'webhooks:manage'] },
    ]);
    const client = await connect(con.secret);
    expect((await client.callTool({ name: 'ping', arguments: {} })).structuredContent).toMatchObject({ projectId: a.id });
    expect((await client.callTool({ name: 'ping', arguments: { project: b.id } })).structuredContent).toMatchObject({ projectId: b.id });
    const write = { body: { keywords: { opt_out: ['STOP'], opt_in: ['START'] } } };
    expect(toolError(await client.callTool({ name: 'setConsentKeywords', arguments: write })).code).toBe('project_required');
    expect(toolError(await client.callTool({ name: 'ping', arguments: { project: stranger.id } })).code).toBe('project_not_attached');
    // tools/list follows the selected project: webhooks only where the connection holds webhooks:manage.
    expect((await client.listTools()).tools.map((x) => x.name)).not.toContain('createWebhook');
    await client.close();
    const onB = await connect(con.secret, { 'X-Service-Project': b.id });
    expect((await onB.listTools()).tools.map((x) => x.name)).toContain('createWebhook');
    await onB.close();
  });
});

describe('bad input', () => {
  let key: string;
  beforeAll(async () => {
    const p = await t.admin.project();
    key = (await t.admin.key(p.id, ['contacts:read', 'contacts:write', 'webhooks:manage'])).secret;
  });

  it('When the body is not JSON, then a JSON-RPC parse error', async () => {
    const res = await rpc(key, '{"jsonrpc": "2.0", "id": 1, "method": ');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(-32700);
  });

  it('When the JSON is not JSON-RPC, then the SDK\'s parse error naming JSON-RPC', async () => {
    const res = await rpc(key, { hello: 'world' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(-32700);
    expect(res.body.error.message).toMatch(/JSON-RPC/);
  });

  it('When a session id is forged, then 404 session not found', async () => {
    const res = await rpc(key, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'Mcp-Session-Id': 'forged-session' });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe(-32001);
  });

  it('When GET or DELETE reach /mcp, then 405: the server is stateless', async () => {
    expect((await request(t.app).get('/mcp').set('Authorization', `Bearer ${key}`)).status).toBe(405);
    expect((await request(t.app).delete('/mcp').set('Authorization', `Bearer ${key}`)).status).toBe(405);
  });

  it('When an unknown tool is called, then an invalid-params protocol error', async () => {
    const client = await connect(key);
    await expect(client.callTool({ name: 'noSuchTool', arguments: {} })).rejects.toThrow(/Unknown tool/);
    await client.close();
  });

  it('When arguments fail the schema, then a tool error invalid_request, and nothing is stored', async () => {
    const client = await connect(key);
    expect(toolError(await client.callTool({ name: 'listContacts', arguments: { limit: 1000 } })).code).toBe('invalid_request');
    expect(toolError(await client.callTool({ name: 'listContacts', arguments: { limit: { deep: 1 } } })).code).toBe('invalid_request');
    expect(toolError(await client.callTool({ name: 'listContacts', arguments: { surprise: 1 } })).code).toBe('invalid_request');
    expect(toolError(await client.callTool({ name: 'updateContact', arguments: { id: '1', body: { name: 42 } } })).code).toBe('invalid_request');
    expect(toolError(await client.callTool({ name: 'ping', arguments: { project: 7 } })).code).toBe('invalid_request');
    await client.close();
  });

  it('When an argument is huge, then the operation\'s own limit answers, and a body past the endpoint\'s limit is 413', async () => {
    const client = await connect(key);
    // createWebhook takes at most 16 KiB (x-body-limit): a bigger body is 413 payload_too_large there, and here.
    const big = 'x'.repeat(300_000);
    const err = toolError(await client.callTool({ name: 'createWebhook', arguments: { body: { url: `https://example.com/${big}`, events: ['message.received'] } } }));
    expect(err.code).toBe('payload_too_large');
    expect(await t.db.prisma.webhookEndpoint.count({ where: { url: { startsWith: 'https://example.com/xxx' } } })).toBe(0);
    await client.close();
    const huge = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ping', arguments: { pad: 'y'.repeat(40 * 1024 * 1024) } } });
    const res = await rpc(key, huge);
    expect(res.status).toBe(413);
  });
});

describe('the per-credential rate limit', () => {
  it('When tool calls pass the credential\'s limit, then rate_limited, as over HTTP', async () => {
    const limited = await startTestApp({ config: { rateLimitPerMinute: 3 } });
    try {
      const p = await limited.admin.project();
      const k = await limited.admin.key(p.id, ['contacts:read']);
      const call = () => request(limited.app).post('/mcp').set('Authorization', `Bearer ${k.secret}`).set('Accept', 'application/json, text/event-stream')
        .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ping', arguments: {} } });
      const results = [];
      for (let i = 0; i < 4; i++) results.push((await call()).body.result);
      expect(results.slice(0, 3).every((r) => !r.isError)).toBe(true);
      expect(toolError(results[3]).code).toBe('rate_limited');
    } finally {
      await limited.close();
    }
  });
});

describe('metrics and logs', () => {
  it('When tools are called, then the metrics count them by tool and outcome', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    const client = await connect(key.secret);
    await client.callTool({ name: 'ping', arguments: {} });
    await client.callTool({ name: 'updateContact', arguments: { id: '1', body: { name: 'x' } } });
    await client.close();
    const text = await t.services.metrics!.registry.metrics();
    expect(text).toMatch(/mcp_tool_calls_total\{tool="ping",outcome="ok"\} [1-9]/);
    expect(text).toMatch(/mcp_tool_calls_total\{tool="updateContact",outcome="insufficient_scope"\} [1-9]/);
  });
});
