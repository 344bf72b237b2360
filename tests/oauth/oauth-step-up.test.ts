/**
 * Scopes asked for and stepped up (MCP 2025-11-25 "Scope Selection Strategy" and "Scope Challenge
 * Handling"): the 401 of /mcp names the starter scopes, which the SDK's client asks for; a call
 * needing more answers 403 with `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"` on
 * /mcp and on /v1; the SDK's client authorizes again for them; the consent page shows what the
 * client holds already, which the person keeps or drops.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { TestApp } from '../support/app.js';
import { useListeningApp } from '../support/listening.js';
import { inbound } from '../support/inbound.js';
import { person } from '../support/dashboard.js';
import { answer, codeOf } from '../support/oauth.js';
import { AgentStorage } from '../support/mcp-agent.js';

let t: TestApp;
let base: string;
useListeningApp((app) => ({ t, base } = app));

const STARTER = 'conversations:read contacts:read templates:read';
const email = () => `stepup-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;

describe('step-up', () => {
  it('When the SDK client starts, then it asks for the starter scopes the 401 names', async () => {
    const res = await request(t.app).post('/mcp').send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp", scope="${STARTER}"`);
    const storage = new AgentStorage();
    await expect(new Client({ name: 'a', version: '1' }).connect(new StreamableHTTPClientTransport(new URL('/mcp', base), { authProvider: storage }))).rejects.toThrow(UnauthorizedError);
    expect(storage.authorizationUrl?.searchParams.get('scope')).toBe(STARTER);
  });

  it('When an agent granted only reads sends a message, then /mcp answers 403 insufficient_scope, the SDK client authorizes again, the page shows the earlier grant, and the send goes through', async () => {
    const p = await t.admin.project('Step-up');
    const { agent } = await person(t, p.id, email(), 'owner');
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: p.id } });
    await inbound(t, channel.phoneNumberId, '14155550177', 'hello?');
    const storage = new AgentStorage({ keepRefreshToken: false });
    const mcpUrl = new URL('/mcp', base);

    // 1. The first authorization: reads only.
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: storage });
    await expect(new Client({ name: 'desk', version: '1' }).connect(first)).rejects.toThrow(UnauthorizedError);
    let redirected = await agent.get(storage.authorizationUrl!.pathname + storage.authorizationUrl!.search);
    let location = String(redirected.headers.location);
    let approved = await answer(agent, location, new URL(location, base).searchParams.get('request')!, 'approve', { projects: [{ id: p.id, scopes: ['conversations:read', 'contacts:read'] }] });
    await first.finishAuth(codeOf(String(approved.headers.location)).code);
    const readOnly = storage.saved!.access_token;

    // 2. /v1 refuses the send with the challenge too.
    const v1 = await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${readOnly}`).send({ type: 'text', phone: '+14155550177', content: 'x' });
    expect(v1.status).toBe(403);
    expect(v1.body.error.code).toBe('insufficient_scope');
    expect(v1.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect(v1.headers['www-authenticate']).toContain('scope="conversations:read contacts:read messages:send"');
    expect(v1.headers['www-authenticate']).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);

    // 3. The send over MCP: HTTP 403 with the challenge; the SDK client starts a new authorization for it.
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: storage });
    const client = new Client({ name: 'desk', version: '1' });
    await client.connect(transport);
    const send = { name: 'sendMessage', arguments: { body: { type: 'text', phone: '+14155550177', content: 'Stepped up.' } } };
    storage.authorizationUrl = undefined;
    await expect(client.callTool(send)).rejects.toThrow(UnauthorizedError);
    expect(storage.authorizationUrl!.searchParams.get('scope')).toBe('conversations:read contacts:read messages:send');

    // 4. The consent page shows what the client holds (ticked, "granted earlier") and the new scope (asked for: preselected).
    redirected = await agent.get(storage.authorizationUrl!.pathname + storage.authorizationUrl!.search);
    location = String(redirected.headers.location);
    const page = await agent.get(location);
    expect(page.text).toContain('already holds access you granted earlier');
    expect(page.text).toMatch(/name="project" value="[^"]+" checked> Connect/);
    expect(page.text).toMatch(/value="conversations:read" checked> conversations:read <small class="muted">\(granted earlier\)/);
    expect(page.text).toMatch(/value="messages:send" checked> messages:send <small class="muted">\(asked for now\)/);
    approved = await answer(agent, location, new URL(location, base).searchParams.get('request')!, 'approve', { projects: [{ id: p.id, scopes: ['conversations:read', 'contacts:read', 'messages:send'] }] });
    expect(approved.status).toBe(303);
    await transport.finishAuth(codeOf(String(approved.headers.location)).code);

    // 5. The same call goes through.
    const sent = await client.callTool(send);
    expect(sent.isError).toBeFalsy();
    expect(sent.structuredContent).toMatchObject({ status: 'sent' });
    await client.close();
  });

  it('When an agent granted only reads sends through callTool, then /mcp answers the same 403 insufficient_scope challenge as calling sendMessage by name', async () => {
    const p = await t.admin.project('Step-up via callTool');
    const { agent } = await person(t, p.id, email(), 'owner');
    const storage = new AgentStorage({ keepRefreshToken: false });
    const first = new StreamableHTTPClientTransport(new URL('/mcp', base), { authProvider: storage });
    await expect(new Client({ name: 'desk', version: '1' }).connect(first)).rejects.toThrow(UnauthorizedError);
    const redirected = await agent.get(storage.authorizationUrl!.pathname + storage.authorizationUrl!.search);
    const location = String(redirected.headers.location);
    const approved = await answer(agent, location, new URL(location, base).searchParams.get('request')!, 'approve', { projects: [{ id: p.id, scopes: ['conversations:read', 'contacts:read'] }] });
    await first.finishAuth(codeOf(String(approved.headers.location)).code);
    const readOnly = storage.saved!.access_token;

    const send = { body: { type: 'text', phone: '+14155550178', content: 'x' } };
    const call = (params: object) => request(t.app).post('/mcp').set('Accept', 'application/json, text/event-stream').set('Authorization', `Bearer ${readOnly}`)
      .send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params });
    const direct = await call({ name: 'sendMessage', arguments: send });
    const through = await call({ name: 'callTool', arguments: { name: 'sendMessage', arguments: send } });
    expect(direct.status).toBe(403);
    expect(direct.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect(through.status).toBe(403);
    expect(through.headers['www-authenticate']).toBe(direct.headers['www-authenticate']);
    expect(through.body).toEqual(direct.body);
  });

  it('When an agent granted only reads sends at MCP 2026-07-28, then the same 403 challenge with the request\'s id, after the headers are checked (a mismatched Mcp-Name is 400 -32020 first)', async () => {
    const p = await t.admin.project('Step-up at 2026-07-28');
    const { agent } = await person(t, p.id, email(), 'owner');
    const storage = new AgentStorage({ keepRefreshToken: false });
    const first = new StreamableHTTPClientTransport(new URL('/mcp', base), { authProvider: storage });
    await expect(new Client({ name: 'modern', version: '1' }).connect(first)).rejects.toThrow(UnauthorizedError);
    const redirected = await agent.get(storage.authorizationUrl!.pathname + storage.authorizationUrl!.search);
    const location = String(redirected.headers.location);
    const approved = await answer(agent, location, new URL(location, base).searchParams.get('request')!, 'approve', { projects: [{ id: p.id, scopes: ['conversations:read', 'contacts:read'] }] });
    await first.finishAuth(codeOf(String(approved.headers.location)).code);
    const readOnly = storage.saved!.access_token;

    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const call = (name: string) => request(t.app).post('/mcp').set('Authorization', `Bearer ${readOnly}`)
      .set('MCP-Protocol-Version', '2026-07-28').set('Mcp-Method', 'tools/call').set('Mcp-Name', name)
      .send({ jsonrpc: '2.0', id: 'send-1', method: 'tools/call', params: { name: 'sendMessage', arguments: { body: { type: 'text', phone: '+14155550178', content: 'x' } }, _meta: meta } });
    const challenged = await call('sendMessage');
    expect(challenged.status).toBe(403);
    expect(challenged.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect(challenged.body).toMatchObject({ id: 'send-1', error: { data: { code: 'insufficient_scope', missing: ['messages:send'] } } });
    const mismatched = await call('listContacts');
    expect(mismatched.status).toBe(400);
    expect(mismatched.body).toMatchObject({ id: 'send-1', error: { code: -32020 } });
  });

  it('When the person drops a scope and a project granted earlier, then the connection loses them', async () => {
    const a = await t.admin.project('Keep A');
    const b = await t.admin.project('Drop B');
    const who = email();
    const { agent } = await person(t, a.id, who, 'owner');
    await person(t, b.id, who, 'owner');
    const storage = new AgentStorage({ keepRefreshToken: false });
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), { authProvider: storage });
    await expect(new Client({ name: 'x', version: '1' }).connect(transport)).rejects.toThrow(UnauthorizedError);
    const url = storage.authorizationUrl!;
    let location = String((await agent.get(url.pathname + url.search)).headers.location);
    await answer(agent, location, new URL(location, base).searchParams.get('request')!, 'approve', {
      projects: [{ id: a.id, scopes: ['conversations:read', 'contacts:read'] }, { id: b.id, scopes: ['contacts:read'] }],
      defaultProject: a.id,
    });
    // Again (as a step-up would): keep A's conversations:read only, untick B.
    location = String((await agent.get(url.pathname + url.search)).headers.location);
    const page = await agent.get(location);
    expect(page.text).toContain(`Granted earlier on Drop B: contacts:read.`);
    const res = await answer(agent, location, new URL(location, base).searchParams.get('request')!, 'approve', { projects: [{ id: a.id, scopes: ['conversations:read'] }] });
    expect(res.status).toBe(303);
    const connection = await t.db.prisma.agentConnection.findFirstOrThrow({ where: { clientId: storage.info!.client_id }, include: { projects: true } });
    expect(connection.projects.map((x) => [x.projectId, x.scopes])).toEqual([[a.id, ['conversations:read']]]);
    const audit = await t.db.prisma.dashboardAudit.findMany({ where: { projectId: b.id, subject: connection.id }, orderBy: { at: 'asc' } });
    expect(audit.map((r) => r.action)).toEqual(['agent.grant', 'agent.disconnect']);
  });

  it('When an operator-issued token lacks the scope on /mcp, then the call is a tool error insufficient_scope (no authorization can widen it)', async () => {
    const p = await t.admin.project();
    const con = await t.admin.connection([{ projectId: p.id, scopes: ['contacts:read'] }]);
    const res = await request(t.app).post('/mcp').set('Accept', 'application/json, text/event-stream').set('Authorization', `Bearer ${con.secret}`)
      .send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'sendMessage', arguments: { body: { type: 'text', phone: '+14155550100', content: 'x' } } } });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.result.content[0].text).error.code).toBe('insufficient_scope');
  });
});
