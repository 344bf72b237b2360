/**
 * A wrong-typed `sdp` is the caller's mistake on every path that takes one (issue 70, item 5): the
 * API answers 400 invalid_request (tests/calls/calls.test.ts), and so does the MCP tool of the same
 * operation (a tool call runs as the HTTP call: http/mcp/call.ts), for accepting a ringing call and
 * for starting one, never a 405 or a 500. The call is left ringing. The bot's call helpers take no
 * SDP (lib/bot/ops-calls.ts: accepting needs a softphone): one given anyway is a helper refusal,
 * invalid_request, not an exception. The dashboard has no call action.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { connectedProject, startTestApp, type TestApp } from '../support/app.js';
import { SCOPES } from '../../lib/access/scope-catalogue.js';
import { runHelper } from '../../lib/bot/helpers.js';
import type { BotDeps } from '../../lib/bot/host-types.js';

let t: TestApp;
let client: Client;
let callId: number;
let contactId: number;
let projectId: string;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
  const { projectId: id, secret } = await connectedProject(t, 'Call SDP paths', [...SCOPES]);
  projectId = id;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId } });
  const ring = await request(t.sim!.url).post('/_sim/calls').send({ phone_number_id: channel.phoneNumberId, from: '5511944440001', name: 'Ada' });
  expect(ring.status).toBe(200);
  const call = await t.db.pool.query<{ id: string; contact_id: string }>(
    'SELECT c.id, cv.contact_id FROM calls c JOIN conversations cv ON cv.id = c.conversation_id WHERE c.call_id = $1', [ring.body.call_id],
  );
  callId = Number(call.rows[0].id);
  contactId = Number(call.rows[0].contact_id);
  client = new Client({ name: 'calls-sdp', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', t.baseUrl), { requestInit: { headers: { Authorization: `Bearer ${secret}` } } }));
}, 60_000);
afterAll(async () => {
  await client?.close();
  await t?.close();
});

/** The tool's error, without its request id. */
function errorOf(result: any): { code: string; message: string } {
  expect(result.isError).toBe(true);
  return JSON.parse(result.content[0].text).error;
}

const WRONG: Array<[string, unknown]> = [['a number', 42], ['an object', { sdp: 'v=0' }], ['an array', ['v=0']], ['null', null], ['a boolean', true]];

describe('the MCP tools of calls', () => {
  it.each(WRONG)('When actOnCall (accept) gets an sdp that is %s, then the tool answers invalid_request naming sdp and the call still rings', async (_name, sdp) => {
    const result = await client.callTool({ name: 'actOnCall', arguments: { id: callId, body: { action: 'accept', sdp } } });
    const error = errorOf(result);
    expect(error.code).toBe('invalid_request');
    expect(error.message).toMatch(/sdp/);
    const call = await t.db.pool.query('SELECT status FROM calls WHERE id = $1', [callId]);
    expect(call.rows[0].status).toBe('ringing');
  });

  it.each(WRONG)('When startCall gets an sdp that is %s, then the tool answers invalid_request naming sdp', async (_name, sdp) => {
    const result = await client.callTool({ name: 'startCall', arguments: { body: { contact_id: contactId, sdp } } });
    const error = errorOf(result);
    expect(error.code).toBe('invalid_request');
    expect(error.message).toMatch(/sdp/);
  });
});

describe("the bot's call helpers", () => {
  it.each(WRONG)('When calls.reject is given an sdp that is %s, then the helper answers invalid_request and the call still rings', async (_name, sdp) => {
    const inv = { projectId, mode: 'production' as const, logLines: 0 };
    const answer = JSON.parse(await runHelper(t.services.deps as unknown as BotDeps, inv, 'calls.reject', JSON.stringify({ callId: String(callId), sdp })));
    expect(answer).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
    const call = await t.db.pool.query('SELECT status FROM calls WHERE id = $1', [callId]);
    expect(call.rows[0].status).toBe('ringing');
  });
});
