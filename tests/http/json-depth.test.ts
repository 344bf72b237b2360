/**
 * How deeply JSON input may nest (issue 55, finding 8; lib/platform/json-depth.ts): a JSON body of
 * the API nests at most 64 levels, judged before the validator or a handler walks it, so a deep
 * body is a clean 400 (or 413 past the size limit), never a stack overflow's 500; an MCP tool
 * argument follows the same bound and is answered as a tool error, never JSON-RPC -32603.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { SCOPES } from '../../lib/access/scope-catalogue.js';

let t: TestApp;
let key: string;
beforeAll(async () => {
  t = await startTestApp();
  key = (await t.admin.key((await t.admin.project()).id, [...SCOPES])).secret;
});
afterAll(async () => {
  await t.close();
});

/** `levels` nested arrays (`[[…]]`) or objects (`{"a":{…}}`) as JSON text. */
const arrays = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
const objects = (levels: number) => '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1);

const mcp = (body: string) =>
  request(t.app).post('/mcp').set('Authorization', `Bearer ${key}`).set('Accept', 'application/json, text/event-stream').set('Content-Type', 'application/json').send(body);
const callTool = (name: string, args: string) => mcp(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`);

function toolError(res: request.Response): { code: string; message: string; details?: any } {
  expect({ status: res.status, rpcError: res.body.error }).toEqual({ status: 200, rpcError: undefined });
  expect(res.body.result.isError).toBe(true);
  return JSON.parse(res.body.result.content[0].text).error;
}

describe('MCP tool arguments', () => {
  it('When a tool argument nests 200,000 levels, then a tool error names the 64-level limit (not JSON-RPC -32603); the frame itself that deep is a 4xx; the service answers on', async () => {
    for (const deep of [arrays(200_000), objects(200_000)]) {
      const err = toolError(await callTool('updateContact', `{"id":"ctc_1","body":${deep}}`));
      expect(err.code).toBe('invalid_request');
      expect(err.message).toMatch(/at most 64 levels/);
      expect(err.details).toEqual({ max_depth: 64 });
    }
    // The JSON-RPC frame itself that deep (id, params, _meta, a batch): a 4xx or a result, never -32603 or a 5xx.
    for (const deep of [arrays(200_000), objects(200_000)]) {
      for (const body of [
        `{"jsonrpc":"2.0","id":${deep},"method":"tools/list"}`,
        `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":${deep}}`,
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","arguments":{},"_meta":${deep}}}`,
        `[${deep}]`,
      ]) {
        const res = await mcp(body);
        expect({ frame: body.slice(0, 60), status: res.status < 500, internal: res.body.error?.code === -32603 }).toEqual({ frame: body.slice(0, 60), status: true, internal: false });
      }
    }
    const ping = await callTool('ping', '{}');
    expect(ping.body.result.isError).toBeUndefined();
  });

  it('When an argument nests 64 levels, then the operation judges it; at 65, a tool error before it runs', async () => {
    // The body argument {definition: X}: the body is level 1, X from 2 on.
    const judged = toolError(await callTool('updateFlow', `{"name":"deep_mcp","body":{"definition":${objects(63)}}}`));
    expect(judged.code).toBe('invalid_flow');
    const err = toolError(await callTool('updateFlow', `{"name":"deep_mcp","body":{"definition":${objects(64)}}}`));
    expect(err).toMatchObject({ code: 'invalid_request', details: { max_depth: 64 } });
  });
});

describe('JSON bodies of the API', () => {
  const auth = () => ({ Authorization: `Bearer ${key}` });

  it('When a body nests 65 levels, then 400 invalid_request naming the body and the limit; at 64 the operation judges it', async () => {
    const put = (definition: string) => request(t.app).put('/v1/flows/deep_http').set(auth()).set('Content-Type', 'application/json').send(`{"definition":${definition}}`);
    const refused = await put(objects(64));
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'body' }], max_depth: 64 } });
    const judged = await put(objects(63));
    expect({ status: judged.status, code: judged.body.error?.code }).toEqual({ status: 400, code: 'invalid_flow' });
  });

  it('When a Flow definition nests 6,000 levels (a few KB), then 400, not a 500', async () => {
    const res = await request(t.app).put('/v1/flows/deep_one').set(auth()).set('Content-Type', 'application/json').send(`{"definition":${objects(6000)}}`);
    expect(res.status).toBe(400);
    expect(res.body.error.details.max_depth).toBe(64);
  });

  it('When every operation with a JSON body gets 6,000 and 200,000 levels, at the top and in its first field, then 400 or 413 in the envelope, never a 5xx', async () => {
    const doc = t.services.deps.contract.document as any;
    const resolve = (node: any, kind: string) => (node?.$ref ? doc.components[kind][node.$ref.split('/').pop()] : node);
    const answers: string[] = [];
    let n = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const method of ['post', 'put', 'patch', 'delete'] as const) {
        const schema = resolve(resolve(item[method]?.requestBody, 'requestBodies')?.content?.['application/json']?.schema, 'schemas');
        if (!schema) continue;
        const url = path.replace(/\{[^}]+\}/g, 'abc');
        const first = Object.keys(schema.properties ?? {})[0];
        for (const deep of [arrays(6000), objects(6000), arrays(200_000), objects(200_000)]) {
          for (const body of [deep, ...(first ? [`{"${first}":${deep}}`] : [])]) {
            const res = await request(t.app)[method](url).set(auth()).set('Idempotency-Key', `deep-${n++}`).set('Content-Type', 'application/json').send(body);
            const clean = (res.status === 400 || res.status === 413) && res.body.success === false;
            if (!clean) answers.push(`${method.toUpperCase()} ${path} ${body.slice(0, 12)}… → ${res.status} ${res.text.slice(0, 120)}`);
          }
        }
      }
    }
    expect(answers).toEqual([]);
  }, 120_000);
});
