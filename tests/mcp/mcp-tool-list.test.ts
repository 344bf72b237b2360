/**
 * A tool list an agent can afford: tools/list for a key holding every scope stays within 40,000
 * bytes (the core groups listed, the rest described by `describeTools` and callable by name), is
 * compressed when the client accepts it, speaks in the tools' arguments rather than HTTP, spells a
 * shared schema out once, and carries annotations true to each operation.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { gunzipSync, brotliDecompressSync } from 'node:zlib';
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { SCOPES } from '../../lib/access/scope-catalogue.js';
import { TOOL_LIST_BUDGET } from '../../http/mcp/endpoint.js';
import { toolsFromContract } from '../../http/mcp/tools.js';
import { shippedContract } from '../support/contracts.js';

let t: TestApp;
let everything: string;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
  const p = await t.admin.project('Tools');
  everything = (await t.admin.connection([{ projectId: p.id, scopes: [...SCOPES] }])).secret;
});
afterAll(async () => {
  await t.close();
});

const list = (bearer: string, headers: Record<string, string> = {}) =>
  request(t.app).post('/mcp').set('Accept', 'application/json, text/event-stream').set('Authorization', `Bearer ${bearer}`).set(headers)
    .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });

/** The answer's bytes as sent (supertest would inflate them). */
function rawList(encoding: string): Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const req = http.request(new URL('/mcp', t.baseUrl), {
      method: 'POST',
      headers: { Authorization: `Bearer ${everything}`, Accept: 'application/json, text/event-stream', 'Content-Type': 'application/json', 'Accept-Encoding': encoding },
    }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(parts) }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

describe('tools/list for a key holding every scope', () => {
  it('When listed, then the answer is at most 40,000 bytes, and every operation is listed or named by describeTools', async () => {
    expect(TOOL_LIST_BUDGET).toBe(40_000);
    const res = await list(everything, { 'Accept-Encoding': 'identity' });
    expect(res.status).toBe(200);
    const bytes = Buffer.byteLength(res.text);
    process.stdout.write(`tools/list for every scope: ${bytes} bytes, ${res.body.result.tools.length} tools listed (describeTools included)\n`);
    expect(bytes).toBeLessThanOrEqual(40_000);
    const tools = res.body.result.tools as Array<{ name: string; description: string; outputSchema?: unknown }>;
    const names = tools.map((x) => x.name);
    // The core groups (messages, conversations, contacts), then what fits (templates first: a send outside the 24 hours needs one).
    expect(names).toEqual(expect.arrayContaining(['ping', 'sendMessage', 'listConversations', 'updateConversationState', 'listContacts', 'listTemplates', 'describeTools']));
    const describe = tools.find((x) => x.name === 'describeTools')!;
    for (const op of toolsFromContract(shippedContract('public'))) {
      expect({ op: op.name, reachable: names.includes(op.name) || describe.description.includes(op.name) }).toEqual({ op: op.name, reachable: true });
    }
    expect(tools.every((x) => x.outputSchema === undefined)).toBe(true);
  });

  it('When describeTools is asked for a group left out, then it answers their descriptions and arguments, and such a tool is called by name', async () => {
    const client = new Client({ name: 'tools', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', t.baseUrl), { requestInit: { headers: { Authorization: `Bearer ${everything}` } } }));
    const listed = (await client.listTools()).tools;
    const describe = listed.find((x) => x.name === 'describeTools')!;
    const group = (describe.inputSchema.properties as any).group.enum[0] as string;
    const described = (await client.callTool({ name: 'describeTools', arguments: { group } })).structuredContent as { tools: Array<{ name: string; inputSchema: { type: string; required?: string[] } }> };
    expect(described.tools.length).toBeGreaterThan(0);
    expect(described.tools.every((x) => x.inputSchema.type === 'object')).toBe(true);
    const unlisted = described.tools.find((x) => x.name.startsWith('list') && !x.inputSchema.required?.length)!;
    expect(listed.map((x) => x.name)).not.toContain(unlisted.name);
    const called = await client.callTool({ name: unlisted.name, arguments: {} });
    expect(called.isError).toBeFalsy();
    await client.close();
  });

  it('When the client accepts gzip or br, then the answer is compressed; otherwise it is not', async () => {
    for (const [encoding, inflate] of [['gzip', gunzipSync], ['br', brotliDecompressSync]] as const) {
      const { headers, body } = await rawList(encoding);
      expect(headers['content-encoding']).toBe(encoding);
      const text = inflate(body).toString('utf8');
      expect(JSON.parse(text).result.tools.length).toBeGreaterThan(10);
      process.stdout.write(`tools/list as ${encoding}: ${body.length} bytes (from ${Buffer.byteLength(text)})\n`);
    }
    const plain = await list(everything, { 'Accept-Encoding': 'identity' });
    expect(plain.headers['content-encoding']).toBeUndefined();
  });
});

/** The `$defs` names a schema never reaches from its own properties, following references through definitions. */
function unreachedDefs(schema: Record<string, any>): string[] {
  const defs: Record<string, unknown> = schema.$defs ?? {};
  const reached = new Set<string>();
  const pending: unknown[] = [{ ...schema, $defs: undefined }];
  while (pending.length) {
    const node = pending.pop();
    if (Array.isArray(node)) pending.push(...node);
    else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        const name = k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/') ? v.slice(8) : undefined;
        if (name !== undefined && !reached.has(name)) {
          reached.add(name);
          pending.push(defs[name]);
        } else pending.push(v);
      }
    }
  }
  return Object.keys(defs).filter((d) => !reached.has(d));
}

describe('schemas an agent can afford', () => {
  it('When listed, then the answer stays within 40,000 bytes and no input schema carries a $def it does not reach', async () => {
    const res = await list(everything, { 'Accept-Encoding': 'identity' });
    expect(Buffer.byteLength(res.text)).toBeLessThanOrEqual(40_000);
    const listed = res.body.result.tools as Array<{ name: string; inputSchema: Record<string, any> }>;
    const described = toolsFromContract(shippedContract('public'));
    for (const x of [...listed, ...described]) expect({ name: x.name, unreached: unreachedDefs(x.inputSchema) }).toEqual({ name: x.name, unreached: [] });
    const send = described.find((x) => x.name === 'sendMessage')!;
    process.stdout.write(`sendMessage input schema: ${Buffer.byteLength(JSON.stringify(send.inputSchema))} bytes, $defs ${Object.keys((send.inputSchema as any).$defs ?? {}).join(', ')}\n`);
  });

  it('When a tool takes `project`, then its schema says what it is and where to find one', () => {
    for (const x of toolsFromContract(shippedContract('public'))) {
      const project = (x.inputSchema.properties as Record<string, { description?: string }>).project;
      expect({ name: x.name, said: project.description }).toEqual({ name: x.name, said: expect.stringContaining('listProjects') });
    }
  });
});

describe('what the tools say', () => {
  it('When read, then descriptions speak of arguments, not headers, and stay short', async () => {
    const tools = (await list(everything)).body.result.tools as Array<{ name: string; description: string; inputSchema: unknown }>;
    for (const x of tools) {
      // describeTools names the tools it describes; every other description is at most 400 characters and its scopes.
      if (x.name !== 'describeTools') expect({ name: x.name, long: x.description.length > 450 }).toEqual({ name: x.name, long: false });
      expect(JSON.stringify(x)).not.toMatch(/X-Service-Project|Idempotency-Key|If-Match/);
    }
    const send = tools.find((x) => x.name === 'sendMessage')!;
    expect(send.description).toContain('`idempotency_key`');
    expect(send.description).toContain('messages:send');
  });

  it('When a schema is shared by several tools, then it is spelled out in one of them only', () => {
    const tools = toolsFromContract(shippedContract('public'));
    const full = tools.filter((x) => JSON.stringify((x.inputSchema as any).$defs?.TemplateSend ?? {}).includes('"properties"'));
    expect(full.map((x) => x.name)).toHaveLength(1);
  });

  it('When annotated, then sends and broadcasts are open world, a send is not idempotent, reads are read-only and removals destructive', () => {
    const tools = toolsFromContract(shippedContract('public'));
    const a = (name: string) => tools.find((x) => x.name === name)!.annotations;
    expect(a('sendMessage')).toEqual({ readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true });
    expect(a('createBroadcast')).toMatchObject({ openWorldHint: true, idempotentHint: false, destructiveHint: false });
    expect(a('listContacts')).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    expect(a('updateContact')).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false });
    expect(a('deleteTemplate')).toMatchObject({ destructiveHint: true, idempotentHint: true, openWorldHint: true });
  });
});
