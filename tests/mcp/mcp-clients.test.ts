/**
 * The MCP server with clients and contracts none of this service's code wrote: the MCP Inspector's
 * CLI lists and calls tools with an operator-issued token; an operation added to a copy of
 * openapi.yaml becomes a tool with no other change; and two instances on one database serve the
 * same token, and both refuse it once it is revoked.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { runProcess } from '../support/local.js';
import { until } from '../support/bots.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';
import { contractOf } from '../../http/contract.js';
import { handlers } from '../../handlers/index.js';
import type { HandlerMap } from '../../http/handler-types.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

const INSPECTOR = path.join(PROJECT_ROOT, 'node_modules', '@modelcontextprotocol', 'inspector-cli', 'build', 'index.js');

async function inspector(url: string, token: string, ...args: string[]) {
  const run = await runProcess(process.execPath, [INSPECTOR, url, '--transport', 'http', '--header', `Authorization: Bearer ${token}`, ...args], {
    timeoutMs: 30_000,
    // It finds its own package.json relative to the working directory.
    cwd: path.dirname(INSPECTOR),
  });
  if (run.code !== 0) throw new Error(`inspector exited ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

describe('the MCP Inspector\'s CLI, a client none of us wrote', () => {
  it('When it lists tools and calls one with an operator-issued token, then it gets the contract\'s tools and the operation\'s data', async () => {
    const p = await t.admin.project();
    const con = await t.admin.connection([{ projectId: p.id, scopes: ['contacts:read', 'conversations:read'] }]);
    const url = `${t.baseUrl}/mcp`;
    const listed = await inspector(url, con.secret, '--method', 'tools/list');
    const names = listed.tools.map((x: { name: string }) => x.name);
    expect(names).toEqual(expect.arrayContaining(['ping', 'listContacts', 'listConversations']));
    expect(names).not.toContain('sendMessage');
    const called = await inspector(url, con.secret, '--method', 'tools/call', '--tool-name', 'ping');
    expect(called.isError).toBeFalsy();
    expect(called.structuredContent).toEqual({ ok: true, projectId: p.id, scopes: ['contacts:read', 'conversations:read'] });
  });
});

describe('tools follow the contract', () => {
  it('When an operation is added to a copy of openapi.yaml, then its tool appears, described and callable, with no other change', async () => {
    const doc = parse(readFileSync(path.join(PROJECT_ROOT, 'openapi.yaml'), 'utf8'));
    doc.paths['/v1/notes/{id}/echo'] = {
      post: {
        operationId: 'echoNote',
        summary: 'Echo a note',
        description: 'Returns the note it was given, for this test.',
        'x-required-scopes': ['contacts:write'],
        parameters: [
          { $ref: '#/components/parameters/XServiceProject' },
          { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[a-z]{1,10}$' } },
          { name: 'loud', in: 'query', schema: { type: 'boolean' } },
        ],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', additionalProperties: false, required: ['text'], properties: { text: { type: 'string', maxLength: 50 } } } } } },
        responses: {
          '200': {
            description: 'The note.',
            content: { 'application/json': { schema: { type: 'object', required: ['success', 'data'], properties: { success: { type: 'boolean' }, data: { type: 'object', required: ['id', 'text'], properties: { id: { type: 'string' }, text: { type: 'string' } } } } } } },
          },
          '400': { $ref: '#/components/responses/BadRequest' },
        },
      },
    };
    const echoNote = (async (req: { params: { id: string }; query: { loud?: boolean }; body: { text: string } }) => ({
      data: { id: req.params.id, text: req.query.loud ? req.body.text.toUpperCase() : req.body.text },
    })) as unknown as HandlerMap[string];
    const other = await startTestApp({ contract: contractOf(doc, 'openapi.yaml (copy)', { requireScopes: true }), handlers: { ...handlers, echoNote } });
    const server = other.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const p = await other.admin.project();
      const writer = await other.admin.key(p.id, ['contacts:write']);
      const reader = await other.admin.key(p.id, ['contacts:read']);
      const url = new URL(`http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`);
      const client = new Client({ name: 'contract-copy', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${writer.secret}` } } }));
      const tool = (await client.listTools()).tools.find((x) => x.name === 'echoNote');
      expect(tool).toMatchObject({
        title: 'Echo a note',
        annotations: { readOnlyHint: false, destructiveHint: false },
        inputSchema: { type: 'object', required: ['id', 'body'], properties: { id: { type: 'string' }, loud: { type: 'boolean' }, body: { type: 'object' }, project: { type: 'string' } } },
      });
      expect(tool!.description).toContain('Returns the note it was given');
      const echoed = await client.callTool({ name: 'echoNote', arguments: { id: 'abc', loud: true, body: { text: 'hello' } } });
      expect(echoed.structuredContent).toEqual({ id: 'abc', text: 'HELLO' });
      // The contract's rules hold for the new tool too: its pattern, its scopes.
      const code = (r: any) => JSON.parse(r.content[0].text).error.code;
      expect(code(await client.callTool({ name: 'echoNote', arguments: { id: 'ABC!', body: { text: 'x' } } }))).toBe('invalid_id');
      expect(code(await client.callTool({ name: 'echoNote', arguments: { id: 'abc', body: { text: 'x'.repeat(51) } } }))).toBe('invalid_request');
      await client.close();
      const readOnly = new Client({ name: 'contract-copy', version: '1' });
      await readOnly.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${reader.secret}` } } }));
      expect((await readOnly.listTools()).tools.map((x) => x.name)).not.toContain('echoNote');
      await readOnly.close();
    } finally {
      await new Promise((r) => server.close(r));
      await other.close();
    }
  });
});

describe('two instances on one database', () => {
  it('When a token is used on both instances and then revoked on one, then that one refuses it at once and the other as soon as the notification arrives, within a second, not its hour-long cache', async () => {
    const b = await startTestApp({ config: { credentialCacheTtlMs: 3_600_000 } });
    try {
      const p = await t.admin.project();
      const con = await t.admin.connection([{ projectId: p.id, scopes: ['contacts:read'] }]);
      const call = (app: TestApp) =>
        request(app.app).post('/mcp').set('Authorization', `Bearer ${con.secret}`).set('Accept', 'application/json, text/event-stream')
          .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ping', arguments: {} } });
      expect((await call(t)).body.result.structuredContent.projectId).toBe(p.id);
      expect((await call(b)).body.result.structuredContent.projectId).toBe(p.id);
      await t.admin.call('post', `/admin/tokens/${con.tokenId}/revoke`);
      const refused = await call(t);
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('invalid_token');
      // The other instance hears of it through PostgreSQL (NOTIFY), a hop that can trail this request on a busy machine.
      const res = await until('the other instance to refuse the revoked token', async () => {
        const r = await call(b);
        return r.status !== 200 && r;
      }, 1000);
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('invalid_token');
    } finally {
      await b.close();
    }
  });
});
