/**
 * Every tool reachable (issue 67 item 3): hosts let a model call only what tools/list listed, so a
 * long list carries `callTool`, which calls a tool left out by name with the same checks, scopes,
 * errors and result as calling that tool directly.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { connectedProject, type TestApp, useTestApp } from '../support/app.js';
import { SCOPES } from '../../lib/access/scope-catalogue.js';

let t: TestApp;
let everything: string;
let projectId: string;
useTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } }, (app) => (t = app));
beforeAll(async () => {
  ({ projectId, secret: everything } = await connectedProject(t, 'Call tool', [...SCOPES]));
});

async function connect(bearer: string) {
  const client = new Client({ name: 'call-tool', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', t.baseUrl), { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } }));
  return client;
}

/** A tool error without its request id, which differs per call by design. */
function errorOf(result: any): { code: string; message: string; details?: unknown } {
  expect(result.isError).toBe(true);
  const { request_id: _id, ...rest } = JSON.parse(result.content[0].text).error;
  return rest;
}

describe('callTool', () => {
  it('When a tool is not in tools/list, then callTool (listed) calls it and answers what the direct call answers', async () => {
    const client = await connect(everything);
    const names = (await client.listTools()).tools.map((x) => x.name);
    expect(names).toContain('callTool');
    expect(names).not.toContain('listBroadcasts');
    const direct = await client.callTool({ name: 'listBroadcasts', arguments: { limit: 5 } });
    const through = await client.callTool({ name: 'callTool', arguments: { name: 'listBroadcasts', arguments: { limit: 5 } } });
    expect(direct.isError).toBeFalsy();
    expect(through).toEqual(direct);
    await client.close();
  });

  it('When describeTools is read, then it says to call a tool left out with callTool', async () => {
    const client = await connect(everything);
    const describe = (await client.listTools()).tools.find((x) => x.name === 'describeTools')!;
    expect(describe.description).toContain('callTool');
    await client.close();
  });

  it('When a send not in tools/list gets a bad argument through callTool, then the error is the direct call\'s', async () => {
    const client = await connect(everything);
    expect((await client.listTools()).tools.map((x) => x.name)).not.toContain('createBroadcast');
    const bad = { body: { name: 'Spring', template_name: 'promo', template_language: 'en', audience: { segment_id: 'not-a-uuid' }, wave_size: 0 } };
    const direct = errorOf(await client.callTool({ name: 'createBroadcast', arguments: bad }));
    const through = errorOf(await client.callTool({ name: 'callTool', arguments: { name: 'createBroadcast', arguments: bad } }));
    expect(direct.code).toBe('invalid_request');
    expect(through).toEqual(direct);
    // An argument the tool does not take: the same refusal before any request.
    const unknownDirect = errorOf(await client.callTool({ name: 'createBroadcast', arguments: { ...bad, colour: 'red' } }));
    const unknownThrough = errorOf(await client.callTool({ name: 'callTool', arguments: { name: 'createBroadcast', arguments: { ...bad, colour: 'red' } } }));
    expect(unknownThrough).toEqual(unknownDirect);
    await client.close();
  });

  it('When the credential\'s scopes lack the tool, then callTool is refused with the direct call\'s insufficient_scope', async () => {
    const key = await t.admin.key(projectId, ['contacts:read']);
    const client = await connect(key.secret);
    const args = { body: { name: 'Spring', template_name: 'promo', template_language: 'en', audience: { filter: {} } } };
    const direct = errorOf(await client.callTool({ name: 'createBroadcast', arguments: args }));
    const through = errorOf(await client.callTool({ name: 'callTool', arguments: { name: 'createBroadcast', arguments: args } }));
    expect(direct.code).toBe('insufficient_scope');
    expect(through).toEqual(direct);
    await client.close();
  });

  it('When callTool names an unknown tool, then the protocol error of calling it by name', async () => {
    const client = await connect(everything);
    const direct = await client.callTool({ name: 'noSuchTool', arguments: {} }).then(() => undefined, (e: Error) => e.message);
    const through = await client.callTool({ name: 'callTool', arguments: { name: 'noSuchTool', arguments: {} } }).then(() => undefined, (e: Error) => e.message);
    expect(direct).toBe('MCP error -32602: Unknown tool: noSuchTool');
    expect(through).toBe(direct);
    await client.close();
  });

  it('When callTool lacks `name`, names itself or has other arguments, then a tool error invalid_request and nothing runs', async () => {
    const client = await connect(everything);
    for (const args of [{}, { name: 'callTool', arguments: { name: 'ping' } }, { name: 'ping', project: projectId }]) {
      expect(errorOf(await client.callTool({ name: 'callTool', arguments: args })).code).toBe('invalid_request');
    }
    await client.close();
  });
});

describe('one paging style', () => {
  it('When an operation pages by offset, then its tool takes `cursor` (not `offset`) and answers `nextCursor`, page after page to null', async () => {
    const p = await t.admin.project('Paging');
    const con = await t.admin.connection([{ projectId: p.id, scopes: [...SCOPES] }]);
    const client = await connect(con.secret);
    for (const name of ['Alpha', 'Beta', 'Gamma']) {
      const made = await client.callTool({ name: 'callTool', arguments: { name: 'createSegment', arguments: { body: { name, filter: { match: 'all', conditions: [] } } } } });
      expect(made.isError).toBeFalsy();
    }
    const described = (await client.callTool({ name: 'describeTools', arguments: { names: ['listBroadcasts', 'listSegments'] } })).structuredContent as { tools: Array<{ name: string; description: string; inputSchema: { properties: Record<string, unknown> } }> };
    for (const x of described.tools) {
      expect(Object.keys(x.inputSchema.properties)).toEqual(expect.arrayContaining(['cursor', 'limit']));
      expect(Object.keys(x.inputSchema.properties)).not.toContain('offset');
      expect(x.description).not.toContain('offset');
    }

    const page = async (cursor?: string) => {
      const r = await client.callTool({ name: 'callTool', arguments: { name: 'listSegments', arguments: { limit: 2, ...(cursor ? { cursor } : {}) } } });
      return JSON.parse((r.content as Array<{ text: string }>)[0].text) as { segments: Array<{ name: string }>; total: number; nextCursor: string | null };
    };
    const first = await page();
    expect(first.segments).toHaveLength(2);
    expect(first.total).toBe(3);
    expect(typeof first.nextCursor).toBe('string');
    const second = await page(first.nextCursor!);
    expect(second.segments).toHaveLength(1);
    expect(second.nextCursor).toBeNull();
    expect([...first.segments, ...second.segments].map((s) => s.name).sort()).toEqual(['Alpha', 'Beta', 'Gamma']);

    const broadcasts = await client.callTool({ name: 'listBroadcasts', arguments: {} });
    expect(JSON.parse((broadcasts.content as Array<{ text: string }>)[0].text)).toMatchObject({ broadcasts: [], nextCursor: null });
    await client.close();
  });

  it('When a cursor the service did not issue, or `offset`, is passed, then invalid_cursor or an unknown argument, and nothing runs', async () => {
    const client = await connect(everything);
    expect(errorOf(await client.callTool({ name: 'listBroadcasts', arguments: { cursor: 'b2Zmc2V0OjU=' } })).code).toBe('invalid_cursor');
    expect(errorOf(await client.callTool({ name: 'listBroadcasts', arguments: { offset: 5 } }))).toMatchObject({ code: 'invalid_request', details: { unknown: ['offset'] } });
    await client.close();
  });
});
