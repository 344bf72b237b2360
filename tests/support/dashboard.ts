/** Helpers for the dashboard tests: people with a role (through the operator API), signed in over HTTP, and the forms' CSRF token. */
import request from 'supertest';
import { expect } from '@jest/globals';
import type { BrowserContext, Page } from 'playwright-core';
import type { TestApp } from './app.js';

export const PASSWORD = 'correct horse battery staple';

/** Gives `email` the role in the project; returns the setup link's path and query (or null when already set up). */
export async function grant(t: TestApp, projectId: string, email: string, role: 'owner' | 'admin' | 'member' = 'owner'): Promise<string | null> {
  const data = await t.admin.call('post', `/admin/projects/${projectId}/dashboard-members`, { email, role });
  if (!data.setup_url) return null;
  const url = new URL(data.setup_url);
  return url.pathname + url.search;
}

/** Submits the setup link's form, as the page does (the token travels in the form). */
export function submitSetup(client: { post(path: string): request.Test }, link: string, password: string, confirm = password) {
  const token = new URL(link, 'http://x').searchParams.get('token') ?? '';
  return client.post('/dashboard/setup').type('form').send({ token, password, confirm });
}

/** The `_csrf` value of the first form on a page. */
export function csrfOf(html: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!m) throw new Error('no CSRF field on the page');
  return m[1];
}

/** A browser-like client (cookies kept) of a person with the role, signed in through the setup link. */
export async function person(t: TestApp, projectId: string, email: string, role: 'owner' | 'admin' | 'member' = 'owner') {
  const agent = request.agent(t.app);
  const link = await grant(t, projectId, email, role);
  if (link) {
    const set = await submitSetup(agent, link, PASSWORD);
    expect(set.status).toBe(303);
  } else {
    const form = await agent.get('/dashboard/login');
    const res = await agent.post('/dashboard/login').type('form').send({ _csrf: csrfOf(form.text), email, password: PASSWORD });
    expect(res.status).toBe(303);
  }
  /** The session's CSRF token, read from a page as a browser would. */
  const csrf = async (path = '/dashboard/projects') => csrfOf((await agent.get(path)).text);
  return { agent, csrf };
}

/** An address no other test (or earlier run) has used: `who`, the time and a random tail. */
export const uniqueEmail = (who: string) => `${who}-${Date.now()}-${Math.random().toString(36).slice(2, 6)}@example.com`;
