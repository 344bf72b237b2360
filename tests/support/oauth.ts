/**
 * Helpers for the OAuth tests: a client registered over HTTP, PKCE pairs, the authorization request,
 * the consent form posted as the page's form would be (one field per ticked box), and the token
 * endpoint. The whole flow runs through the app's real routes with a person signed in to the dashboard.
 */
import { createHash, randomBytes } from 'node:crypto';
import request from 'supertest';
import { expect } from '@jest/globals';
import type { TestApp } from './app.js';
import { csrfOf } from './dashboard.js';

export const REDIRECT = 'http://127.0.0.1:7777/callback';
export const RESOURCE = 'http://localhost:3000/mcp';

export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export async function register(t: TestApp, metadata: Record<string, unknown> = {}) {
  const res = await request(t.app)
    .post('/register')
    .send({ client_name: 'Test agent', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], ...metadata });
  expect(res.status).toBe(201);
  return res.body as { client_id: string; client_secret?: string; client_name?: string; redirect_uris: string[] };
}

export function authorizeQuery(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
  return `/authorize?${q}`;
}

/** GET /authorize as the agent's redirect would send the browser; returns the consent request id. */
export async function authorize(t: TestApp, clientId: string, challenge: string, extra: Record<string, string | undefined> = {}) {
  const res = await request(t.app).get(
    authorizeQuery({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 'st-1', resource: RESOURCE, ...extra }),
  );
  expect(res.status).toBe(302);
  const location = String(res.headers.location);
  expect(location).toMatch(/^\/dashboard\/oauth\/consent\?request=oar_[a-z0-9]{32}$/);
  return { location, requestId: new URL(location, 'http://x').searchParams.get('request')! };
}

export interface Choice {
  projects: Array<{ id: string; scopes: string[] }>;
  defaultProject?: string;
}

/** The consent form as the page sends it: one field per ticked box (URLSearchParams, not a nested object). */
export function consentForm(csrf: string | undefined, requestId: string, decision: 'approve' | 'deny', choice?: Choice): string {
  const form = new URLSearchParams();
  if (csrf !== undefined) form.append('_csrf', csrf);
  form.append('request', requestId);
  form.append('decision', decision);
  for (const p of choice?.projects ?? []) {
    form.append('project', p.id);
    for (const s of p.scopes) form.append(`scope:${p.id}`, s);
  }
  if (choice?.defaultProject) form.append('default', choice.defaultProject);
  return form.toString();
}

type Agent = ReturnType<typeof request.agent>;

/** Opens the consent page as the signed-in person and posts the choice; returns the response of the POST. */
export async function answer(agent: Agent, location: string, requestId: string, decision: 'approve' | 'deny', choice?: Choice) {
  const page = await agent.get(location);
  expect(page.status).toBe(200);
  return agent.post('/dashboard/oauth/consent').type('form').send(consentForm(csrfOf(page.text), requestId, decision, choice));
}

export function codeOf(location: string): { code: string; state: string | null } {
  const url = new URL(location);
  return { code: url.searchParams.get('code')!, state: url.searchParams.get('state') };
}

export function token(t: TestApp, form: Record<string, string | undefined>) {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(form)) if (v !== undefined) body.set(k, v);
  return request(t.app).post('/token').type('form').send(body.toString());
}

export interface Tokens {
  access_token: string;
  refresh_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
}

/** The whole flow for a registered public client and a signed-in person: authorize, consent, code → tokens. */
export async function grantFlow(t: TestApp, agent: Agent, clientId: string, choice: Choice, opts: { scope?: string } = {}) {
  const { verifier, challenge } = pkce();
  const { location, requestId } = await authorize(t, clientId, challenge, { scope: opts.scope });
  const approved = await answer(agent, location, requestId, 'approve', choice);
  expect(approved.status).toBe(303);
  const { code, state } = codeOf(String(approved.headers.location));
  expect(state).toBe('st-1');
  const res = await token(t, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, redirect_uri: REDIRECT, resource: RESOURCE });
  expect(res.status).toBe(200);
  return { tokens: res.body as Tokens, code, verifier, requestId };
}

export const ping = (t: TestApp, bearer: string, project?: string) => {
  const r = request(t.app).get('/v1/ping').set('Authorization', `Bearer ${bearer}`);
  return project ? r.set('X-Service-Project', project) : r;
};
