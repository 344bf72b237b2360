/**
 * Sign-in cannot be turned against its owner (lib/accounts/login-throttle.ts, issue 55 finding 6):
 * failures slow the address that fails on an account (backoff, not a lockout) and the address that
 * sprays many accounts; the right password from an address that has not failed still signs in; every
 * checked failure is in the owner's audit trail, without the password. Time moves on the injected clock.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app.js';
import { csrfOf, person, PASSWORD } from '../support/dashboard.js';
import { ManualClock } from '../../lib/platform/clock.js';
import { MemoryCounterStore, RedisCounterStore, type CounterStore } from '../../lib/platform/counters.js';
import { throttleAddress, waitAfter, LOGIN_THROTTLE } from '../../lib/accounts/login-throttle.js';

let t: TestApp;
// An hour's start: the pair's window begins here, so waits are exact.
const clock = new ManualClock(new Date('2026-03-01T12:00:00Z'));

beforeAll(async () => {
  t = await startTestApp({ clock, config: { trustProxy: true } });
});
afterAll(async () => {
  await t.close();
});

const unique = () => randomBytes(4).toString('hex');

/** One sign-in from `from`, as a browser would post the form. */
async function signIn(app: TestApp, from: string, email: string, password: string) {
  const form = await request(app.app).get('/dashboard/login');
  const token = csrfOf(form.text);
  return request(app.app).post('/dashboard/login').set('Cookie', `dashboard_login=${token}`).set('X-Forwarded-For', from)
    .type('form').send({ _csrf: token, email, password });
}

async function auditRows(projectId: string, want: number) {
  // The failure's audit row is written after the answer (timing must not tell a known email): wait for it.
  for (let i = 0; i < 100; i++) {
    const rows = await t.db.prisma.dashboardAudit.findMany({ where: { projectId, action: 'signin.failed' }, orderBy: { id: 'asc' } });
    if (rows.length >= want) return rows;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`fewer than ${want} signin.failed rows`);
}

describe('dashboard sign-in throttle: the one who fails waits, the owner does not', () => {
  it('When five wrong passwords come from one address, then the owner signs in from another, the failing address waits 1 s, 2 s, 4 s, and the audit trail shows each failure', async () => {
    const project = await t.admin.project('Owner B');
    const owner = `owner.${unique()}@b.test`;
    const { agent } = await person(t, project.id, owner);
    const attacker = '203.0.113.10';
    for (let i = 0; i < 5; i++) expect((await signIn(t, attacker, owner, `guess number ${i}`)).status).toBe(401);

    // The owner, from an address that has not failed: a normal sign-in.
    const ok = await signIn(t, '198.51.100.20', owner, PASSWORD);
    expect(ok.status).toBe(303);
    expect(ok.headers.location).toBe('/dashboard');
    expect(String(ok.headers['set-cookie'])).toContain('dashboard_session=');

    // The failing address is told to wait, the right password included, and the wait doubles.
    const waits: number[] = [];
    for (let round = 0; round < 3; round++) {
      const told = await signIn(t, attacker, owner, PASSWORD);
      expect(told.status).toBe(429);
      expect(told.text).toContain('Too many failed sign-ins');
      const wait = Number(told.headers['retry-after']);
      waits.push(wait);
      // Still inside the wait: refused again, and not counted as a failure.
      clock.advance(wait * 1000 - 500);
      expect((await signIn(t, attacker, owner, 'one more guess')).status).toBe(429);
      clock.advance(500);
      expect((await signIn(t, attacker, owner, `guess after ${wait}`)).status).toBe(401);
    }
    expect(waits).toEqual([1, 2, 4]);
    // Still waiting (8 s now), while the owner signs in again from home.
    expect(Number((await signIn(t, attacker, owner, PASSWORD)).headers['retry-after'])).toBe(8);
    expect((await signIn(t, '198.51.100.20', owner, PASSWORD)).status).toBe(303);

    const rows = await auditRows(project.id, 8);
    expect(rows).toHaveLength(8);
    for (const row of rows) {
      expect(row.accountId).toBeNull();
      expect(row.subject).toBe(owner);
      expect(row.after).toEqual({ email: owner, address: attacker, reason: 'wrong_password', via: 'sign-in' });
      expect(JSON.stringify({ ...row, id: String(row.id) })).not.toMatch(/guess|correct horse/);
    }
    const page = await agent.get(`/dashboard/projects/${project.id}/audit`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('signin.failed');
    expect(page.text).toContain(attacker);
    clock.advance(60 * 60_000);
  });

  it('When many addresses each fail once on an account, then each failing address waits from its first failure, and a clean address signs in', async () => {
    const project = await t.admin.project('Spread');
    const owner = `spread.${unique()}@b.test`;
    await person(t, project.id, owner);
    const from = (i: number) => `192.0.2.${i + 1}`;
    for (let i = 0; i < LOGIN_THROTTLE.accountAlarm + 2; i++) expect((await signIn(t, from(i), owner, `guess ${i} here`)).status).toBe(401);
    // Before the alarm, one failure is free; past it, the address waits after its first.
    expect((await signIn(t, from(0), owner, PASSWORD)).status).toBe(303);
    const late = await signIn(t, from(LOGIN_THROTTLE.accountAlarm + 1), owner, PASSWORD);
    expect(late.status).toBe(429);
    expect(Number(late.headers['retry-after'])).toBe(1);
    expect((await signIn(t, '198.51.100.99', owner, PASSWORD)).status).toBe(303);
    clock.advance(60 * 60_000);
  });

  it('When one address sprays many emails, then it is stopped until its window ends, the right password included; other addresses are not', async () => {
    const project = await t.admin.project('Sprayed');
    const owner = `sprayed.${unique()}@b.test`;
    await person(t, project.id, owner);
    const sprayer = '203.0.113.50';
    for (let i = 0; i < LOGIN_THROTTLE.perAddress; i++) expect((await signIn(t, sprayer, `spray${i}.${unique()}@b.test`, 'Summer2026!!')).status).toBe(401);
    const stopped = await signIn(t, sprayer, owner, PASSWORD);
    expect(stopped.status).toBe(429);
    expect(Number(stopped.headers['retry-after'])).toBeGreaterThan(60);
    expect((await signIn(t, '198.51.100.50', owner, PASSWORD)).status).toBe(303);
    clock.advance(LOGIN_THROTTLE.addressWindowMs);
    expect((await signIn(t, sprayer, owner, PASSWORD)).status).toBe(303);
  });

  it('When an IPv6 guesser changes addresses inside its /64, then it is still the same address', async () => {
    expect(throttleAddress('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(throttleAddress('2001:0db8:0001:0002:ffff:0:0:9')).toBe('2001:db8:1:2::/64');
    expect(throttleAddress('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(throttleAddress('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(throttleAddress('203.0.113.9')).toBe('203.0.113.9');
    expect(throttleAddress('unknown')).toBe('unknown');
    const project = await t.admin.project('Six');
    const owner = `six.${unique()}@b.test`;
    await person(t, project.id, owner);
    for (let i = 0; i < 5; i++) expect((await signIn(t, `2001:db8:5:6::${i + 1}`, owner, `guess ${i} v6`)).status).toBe(401);
    expect((await signIn(t, '2001:db8:5:6::abcd', owner, PASSWORD)).status).toBe(429);
    expect((await signIn(t, '2001:db8:5:7::1', owner, PASSWORD)).status).toBe(303);
    clock.advance(60 * 60_000);
  });

  it('When the waits are laid out, then they double from 1 s and stop at 15 minutes', () => {
    const waits = Array.from({ length: 20 }, (_, i) => waitAfter(i + 1, 0) / 1000);
    expect(waits.slice(0, 8)).toEqual([0, 0, 0, 0, 1, 2, 4, 8]);
    expect(Math.max(...waits)).toBe(900);
    expect(waitAfter(1, LOGIN_THROTTLE.accountAlarm)).toBe(1000);
    expect(waitAfter(60, 0)).toBe(15 * 60_000);
  });
});

describe('counters down', () => {
  it('When the shared counters cannot answer, then sign-in proceeds (fail open) and failures are still audited', async () => {
    const down: CounterStore = { hit: () => Promise.reject(new Error('redis down')), close: async () => {} };
    const app = await startTestApp({ counters: down, config: { trustProxy: true } });
    try {
      const project = await app.admin.project('No counters');
      const owner = `nocount.${unique()}@b.test`;
      await person(app, project.id, owner);
      for (let i = 0; i < 7; i++) expect((await signIn(app, '203.0.113.70', owner, `guess ${i} down`)).status).toBe(401);
      expect((await signIn(app, '203.0.113.70', owner, PASSWORD)).status).toBe(303);
      expect((await auditRows(project.id, 7)).length).toBeGreaterThanOrEqual(7);
    } finally {
      await app.close();
    }
  });
});

describe('two instances', () => {
  it('When an address fails on instance A and B, then both make it wait (shared counters), and the owner signs in on either', async () => {
    const redisUrl = process.env.REDIS_TEST_URL;
    const shared = new MemoryCounterStore();
    const counters = () => (redisUrl ? new RedisCounterStore({ url: redisUrl, timeoutMs: 1000 }) : shared);
    const clock2 = new ManualClock(new Date('2026-04-02T09:00:00Z'));
    const a = await startTestApp({ clock: clock2, counters: counters(), config: { trustProxy: true } });
    const b = await startTestApp({ clock: clock2, counters: counters(), config: { trustProxy: true } });
    try {
      // A real Redis outlives the run: addresses and an email of this run's own keep reruns apart.
      const attacker = `198.18.${randomBytes(1)[0]}.${randomBytes(1)[0]}`;
      const project = await a.admin.project('Shared throttle');
      const owner = `shared.${unique()}@b.test`;
      await person(a, project.id, owner);
      for (const app of [a, b, a, b, a]) expect((await signIn(app, attacker, owner, 'not the password')).status).toBe(401);
      for (const app of [a, b]) {
        const told = await signIn(app, attacker, owner, PASSWORD);
        expect(told.status).toBe(429);
        expect(told.headers['retry-after']).toBe('1');
      }
      expect((await signIn(b, `198.19.${randomBytes(1)[0]}.1`, owner, PASSWORD)).status).toBe(303);
      expect((await signIn(a, `198.19.${randomBytes(1)[0]}.2`, owner, PASSWORD)).status).toBe(303);
      clock2.advance(1000);
      expect((await signIn(b, attacker, owner, PASSWORD)).status).toBe(303);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
