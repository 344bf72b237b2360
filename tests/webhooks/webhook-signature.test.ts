/**
 * The receivers' side of the signature (lib/webhooks/signature.ts), checked against an HMAC
 * computed here by hand, and the delivery policy's numbers.
 */
import { describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { computeSignature, generateTestHeader, signatureHeader, verifyWebhookSignature } from '../../lib/webhooks/signature.js';
import { ATTEMPT_TIMEOUT_MS, DISABLE_AFTER_FAILED_EVENTS, MAX_ATTEMPTS, deliveryPolicy, retryDelayMs } from '../../lib/webhooks/policy.js';
import { Dispatcher } from '../../lib/webhooks/dispatcher.js';

const secret = 'whsec_0123456789abcdefghijklmnopqrstuvwxyz0123';
const body = '{"id":"dlv_1","event":"order.shipped","created_at":"2026-03-01T12:00:00.000Z","webhook_id":"whk_1","data":{"n":1}}';
const now = new Date('2026-03-01T12:00:00Z');
const t0 = Math.floor(now.getTime() / 1000);

describe('verifyWebhookSignature', () => {
  it('When the header was made with the secret over "<t>.<raw body>", then it verifies; the hex equals a hand-made HMAC-SHA256', () => {
    const header = signatureHeader(secret, t0, body);
    expect(header).toBe(`t=${t0},v1=${createHmac('sha256', secret).update(`${t0}.${body}`).digest('hex')}`);
    expect(verifyWebhookSignature(body, header, secret, { now })).toEqual({ ok: true, timestamp: t0 });
    expect(verifyWebhookSignature(Buffer.from(body), header, secret, { now }).ok).toBe(true);
  });

  it('When t is 300 seconds away, then it verifies; at 301 seconds either way, then timestamp_out_of_tolerance', () => {
    for (const skew of [-300, 300]) expect(verifyWebhookSignature(body, signatureHeader(secret, t0 + skew, body), secret, { now }).ok).toBe(true);
    for (const skew of [-301, 301]) {
      expect(verifyWebhookSignature(body, signatureHeader(secret, t0 + skew, body), secret, { now })).toEqual({ ok: false, reason: 'timestamp_out_of_tolerance' });
    }
    expect(verifyWebhookSignature(body, signatureHeader(secret, t0 - 1000, body), secret, { now, toleranceSec: 1200 }).ok).toBe(true);
  });

  it('When the body, secret or signature differ, then bad_signature; a malformed header, malformed_header; a parsed body, parsed_body', () => {
    const header = signatureHeader(secret, t0, body);
    expect(verifyWebhookSignature(body.replace('1}', '2}'), header, secret, { now })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhookSignature(body, header, secret + 'x', { now })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhookSignature(body + ' ', header, secret, { now })).toEqual({ ok: false, reason: 'bad_signature' });
    for (const bad of [undefined, '', 'v1=abc', `t=${t0}`, `t=abc,v1=${'0'.repeat(64)}`, `t=${t0},v1=XYZ`]) {
      expect(verifyWebhookSignature(body, bad, secret, { now })).toEqual({ ok: false, reason: 'malformed_header' });
    }
    expect(verifyWebhookSignature(JSON.parse(body), header, secret, { now })).toEqual({ ok: false, reason: 'parsed_body' });
  });

  it('When several v1 values are sent, then any match verifies', () => {
    const good = computeSignature(secret, t0, body);
    expect(verifyWebhookSignature(body, `t=${t0},v1=${'0'.repeat(64)},v1=${good}`, secret, { now }).ok).toBe(true);
  });

  it('When a test header is generated, then it verifies against the current time', () => {
    expect(verifyWebhookSignature(body, generateTestHeader(body, secret), secret).ok).toBe(true);
  });
});

describe('delivery policy', () => {
  it('When defaults are read, then 5 attempts, waits 5, 10, 20, 40 s, 10 s per attempt, disable after 10 failed events', () => {
    const p = deliveryPolicy();
    expect(MAX_ATTEMPTS).toBe(5);
    expect(p.retryDelaysMs).toEqual([5000, 10000, 20000, 40000]);
    expect(p.attemptTimeoutMs).toBe(ATTEMPT_TIMEOUT_MS);
    expect(ATTEMPT_TIMEOUT_MS).toBe(10_000);
    expect(p.disableAfterFailedEvents).toBe(DISABLE_AFTER_FAILED_EVENTS);
    expect(DISABLE_AFTER_FAILED_EVENTS).toBe(10);
  });

  it('When attempts fail, then the next waits follow the schedule within the jitter, and after the 5th the event is dropped', () => {
    const p = deliveryPolicy();
    expect([1, 2, 3, 4].map((n) => retryDelayMs(p, n, () => 0.5))).toEqual([5000, 10000, 20000, 40000]);
    expect(retryDelayMs(p, 1, () => 0)).toBe(4500);
    expect(retryDelayMs(p, 4, () => 1)).toBe(44000);
    expect(retryDelayMs(p, 5)).toBeNull();
  });

  it('When the schedule is scaled, then the ratios are kept', () => {
    expect(deliveryPolicy({ scale: 0.02 }).retryDelaysMs).toEqual([100, 200, 400, 800]);
    expect(() => deliveryPolicy({ retryDelaysMs: [1, 2] })).toThrow(/4 entries/);
  });
});

describe('Dispatcher', () => {
  it('When one registration has a long queue of slow work, then another registration\'s work starts at once, and limits hold', async () => {
    const running = new Map<string, number>();
    let peak = 0;
    const started: string[] = [];
    const release: Array<() => void> = [];
    const d = new Dispatcher({
      perWebhook: 2, max: 3, maxQueued: 100, onError: () => undefined,
      run: ({ id }) => {
        started.push(id);
        const w = id.split(':')[0];
        running.set(w, (running.get(w) ?? 0) + 1);
        peak = Math.max(peak, running.get(w)!);
        return new Promise<void>((r) => release.push(() => { running.set(w, running.get(w)! - 1); r(); }));
      },
    });
    for (let i = 0; i < 10; i++) d.enqueue({ id: `slow:${i}`, webhookId: 'slow' });
    expect(d.enqueue({ id: 'slow:0', webhookId: 'slow' })).toBe(false); // already queued
    d.enqueue({ id: 'fast:0', webhookId: 'fast' });
    expect(started).toEqual(['slow:0', 'slow:1', 'fast:0']);
    expect(peak).toBe(2);
    while (release.length) release.shift()!();
    await new Promise((r) => setTimeout(r, 0));
    expect(d.size.running).toBeLessThanOrEqual(3);
    const stopping = d.stop();
    while (release.length) release.shift()!();
    await stopping;
    expect(d.enqueue({ id: 'late:0', webhookId: 'late' })).toBe(false);
  });

  it('When a registration is dropped, then its queued work is forgotten and the others keep going', async () => {
    const started: string[] = [];
    const release: Array<() => void> = [];
    const d = new Dispatcher({
      perWebhook: 1, max: 10, maxQueued: 100, onError: () => undefined,
      run: ({ id }) => {
        started.push(id);
        return new Promise<void>((r) => release.push(r));
      },
    });
    for (let i = 0; i < 3; i++) d.enqueue({ id: `a:${i}`, webhookId: 'a' });
    d.enqueue({ id: 'b:0', webhookId: 'b' });
    expect(d.drop('a')).toBe(2); // a:0 is running; a:1 and a:2 were waiting
    expect(d.enqueue({ id: 'a:1', webhookId: 'a' })).toBe(true); // forgotten, so it can come again
    while (release.length) {
      release.shift()!();
      await new Promise((r) => setTimeout(r, 0));
    }
    expect(started).toEqual(['a:0', 'b:0', 'a:1']);
  });
});
