/**
 * An AI agent connects by itself, as Claude or Cursor would: the SDK's own client with its OAuth
 * client provider finds the authorization server from /mcp's 401 (RFC 9728, RFC 8414), registers
 * (RFC 7591), sends the person to the consent page (signed in, the form submitted as the browser
 * would), exchanges the code with PKCE, lists its tools, sends to a simulated customer, reads the
 * conversation, refreshes when the hour is over, and stops at once when the person disconnects it
 * in the dashboard. A token bound to another resource is refused at /mcp.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { useListeningApp } from '../support/listening.js';
import { inbound } from '../support/inbound.js';
import { AgentStorage } from '../support/mcp-agent.js';
import { person, csrfOf } from '../support/dashboard.js';
import { answer, codeOf } from '../support/oauth.js';

let t: TestApp;
let base: string;
// The service's public URL is where the agent reaches it: the metadata and the resource name it.
useListeningApp((app) => ({ t, base } = app));

describe('an agent connects by itself', () => {
  it('When the SDK client runs the whole OAuth flow, then it works the project as consented, refreshes, and stops at once on disconnect', async () => {
    const p = await t.admin.project('Shop');
    const { agent } = await person(t, p.id, `owner-${Date.now()}@example.com`, 'owner');
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: p.id } });
    await inbound(t, channel.phoneNumberId, '14155550188', 'where is my order?');

    const storage = new AgentStorage();
    const mcpUrl = new URL('/mcp', base);
    // 1. Discovery and registration: the first connect meets the 401 and sends the person to authorize.
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: storage });
    await expect(new Client({ name: 'desk', version: '1' }).connect(first)).rejects.toThrow(UnauthorizedError);
    expect(storage.info?.client_id).toBeDefined();
    expect(storage.authorizationUrl?.origin).toBe(base);
    expect(storage.authorizationUrl?.searchParams.get('code_challenge_method')).toBe('S256');
    expect(storage.authorizationUrl?.searchParams.get('resource')).toBe(`${base}/mcp`);

    // 2. The person's browser: /authorize → the consent page (signed in) → approve → back to the agent with a code.
    // The SDK asked for the 401's starter scopes (reads); this agent asks for the send it needs up front
    // (tests/oauth/oauth-step-up.test.ts asks for it later instead).
    expect(storage.authorizationUrl?.searchParams.get('scope')).toBe('conversations:read contacts:read templates:read');
    storage.authorizationUrl!.searchParams.set('scope', 'messages:send conversations:read');
    const redirected = await agent.get(storage.authorizationUrl!.pathname + storage.authorizationUrl!.search);
    expect(redirected.status).toBe(302);
    const location = String(redirected.headers.location);
    const requestId = new URL(location, base).searchParams.get('request')!;
    const approved = await answer(agent, location, requestId, 'approve', { projects: [{ id: p.id, scopes: ['messages:send', 'conversations:read'] }] });
    expect(approved.status).toBe(303);
    const { code } = codeOf(String(approved.headers.location));
    await first.finishAuth(code);
    expect(storage.saved?.access_token).toMatch(/^mcp_at_/);
    const firstAccess = storage.saved!.access_token;

    // 3. Tools as consented: sends and conversation reads, nothing else.
    const client = new Client({ name: 'desk', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: storage }));
    const names = (await client.listTools()).tools.map((x) => x.name);
    expect(names).toEqual(expect.arrayContaining(['sendMessage', 'listConversations', 'listConversationMessages', 'getMessage']));
    expect(names).not.toContain('listContacts');
    const sent = await client.callTool({ name: 'sendMessage', arguments: { body: { type: 'text', phone: '+14155550188', content: 'It ships today.' } } });
    expect(sent.structuredContent).toEqual({ id: expect.stringMatching(/^wamid\./), status: 'sent' });
    const conversations = (await client.callTool({ name: 'listConversations', arguments: { phone: '+14155550188' } })).structuredContent as any;
    const conversationId = String(conversations.conversations[0].id);
    const messages = (await client.callTool({ name: 'listConversationMessages', arguments: { id: conversationId } })).structuredContent as any;
    expect(JSON.stringify(messages)).toContain('It ships today.');
    expect(JSON.stringify(messages)).toContain('where is my order?');
    const atSim = await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${channel.phoneNumberId}&to=14155550188`);
    expect(JSON.stringify(atSim.body)).toContain('It ships today.');

    // 4. An hour later the access token has expired: the client refreshes (rotated) and carries on.
    t.clock.advance(3601_000);
    expect((await client.callTool({ name: 'ping', arguments: {} })).structuredContent).toMatchObject({ projectId: p.id });
    expect(storage.saved!.access_token).not.toBe(firstAccess);

    // 5. The person disconnects the agent in the dashboard: its tokens stop at once.
    const connection = await t.db.prisma.agentConnection.findFirstOrThrow({ where: { clientId: storage.info!.client_id } });
    const agents = await agent.get('/dashboard/agents');
    expect(agents.status).toBe(200);
    expect(agents.text).toContain('Desk agent');
    const disconnected = await agent.post(`/dashboard/agents/${connection.id}/disconnect`).type('form').send({ _csrf: csrfOf(agents.text) });
    expect(disconnected.status).toBe(303);
    const raw = await request(t.app).post('/mcp').set('Authorization', `Bearer ${storage.saved!.access_token}`).set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(raw.status).toBe(401);
    expect(raw.body.error.code).toBe('invalid_token');
    // The client's own attempt: its refresh token is gone too, so it is sent back to authorize.
    await expect(client.callTool({ name: 'ping', arguments: {} })).rejects.toThrow();
    await client.close();
  });
});

describe('a token bound to another resource', () => {
  it('When a token minted for this service\'s MCP URL reaches a deployment with another public URL, then /mcp refuses it with invalid_token', async () => {
    const p = await t.admin.project();
    const { agent } = await person(t, p.id, `res-${Date.now()}@example.com`, 'owner');
    const storage = new AgentStorage();
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), { authProvider: storage });
    await expect(new Client({ name: 'desk', version: '1' }).connect(transport)).rejects.toThrow(UnauthorizedError);
    const redirected = await agent.get(storage.authorizationUrl!.pathname + storage.authorizationUrl!.search);
    const location = String(redirected.headers.location);
    const approved = await answer(agent, location, new URL(location, base).searchParams.get('request')!, 'approve', { projects: [{ id: p.id, scopes: ['contacts:read'] }] });
    await transport.finishAuth(codeOf(String(approved.headers.location)).code);
    const token = storage.saved!.access_token;

    const elsewhere = await startTestApp({ config: { publicBaseUrl: 'https://api.other.example' } });
    try {
      const res = await request(elsewhere.app).post('/mcp').set('Authorization', `Bearer ${token}`).set('Accept', 'application/json, text/event-stream')
        .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('invalid_token');
      expect(res.headers['www-authenticate']).toContain('https://api.other.example/.well-known/oauth-protected-resource/mcp');
      // Here, where it was minted, it works.
      const here = await request(t.app).post('/mcp').set('Authorization', `Bearer ${token}`).set('Accept', 'application/json, text/event-stream')
        .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
      expect(here.status).toBe(200);
    } finally {
      await elsewhere.close();
    }
  });
});
