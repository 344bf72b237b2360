/**
 * Retries are gathered per due bucket before their job is scheduled (lib/webhooks/retry-buckets.ts,
 * issue 69): one job a bucket, not one per failed attempt, never early, and nothing held past its
 * bucket's time or left behind at a stop. Jest's clock stands in for time.
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { RetryBuckets, type DeliveryPairs } from '../../lib/webhooks/retry-buckets.js';

const T0 = Date.parse('2026-11-27T10:00:00.000Z');
let scheduled: Array<{ at: number; deliveries: DeliveryPairs }>;
let failures: number[];

function buckets(opts: { bucketMs?: number; holdMs?: number; fail?: boolean } = {}) {
  return new RetryBuckets({
    bucketMs: opts.bucketMs ?? 1000,
    holdMs: opts.holdMs ?? 1000,
    now: () => Date.now(),
    schedule: async (at, deliveries) => {
      if (opts.fail) throw new Error('runner down');
      scheduled.push({ at: at.getTime(), deliveries });
    },
    onError: (_e, count) => failures.push(count),
  });
}
const retry = (id: string, dueInMs: number, webhookId = 'wh_1') => ({ deliveryId: id, webhookId, nextAttemptAt: new Date(Date.now() + dueInMs) });

beforeEach(() => {
  jest.useFakeTimers({ now: T0 });
  scheduled = [];
  failures = [];
});
afterEach(() => {
  jest.useRealTimers();
});

describe('retry buckets', () => {
  it('When failed attempts written in separate batches fall due within one second, then one job carries them all, at the end of that second', async () => {
    const b = buckets();
    b.add([retry('d1', 5_100)]);
    await jest.advanceTimersByTimeAsync(300);
    b.add([retry('d2', 4_900), retry('d3', 5_050, 'wh_2')]);
    expect(scheduled).toEqual([]); // held for the others of its bucket
    await jest.advanceTimersByTimeAsync(700);
    expect(scheduled).toEqual([{ at: T0 + 6_000, deliveries: [['d1', 'wh_1'], ['d2', 'wh_1'], ['d3', 'wh_2']] }]);
  });

  it('When retries fall due in different seconds, then each second is its own job, none earlier than its retries', async () => {
    const b = buckets();
    b.add([retry('d1', 5_000), retry('d2', 10_400), retry('d3', 10_999)]);
    await jest.advanceTimersByTimeAsync(1000);
    expect(scheduled.map((s) => [s.at - T0, s.deliveries.map(([id]) => id)])).toEqual([[5_000, ['d1']], [11_000, ['d2', 'd3']]]);
  });

  it('When a retry falls due sooner than the hold, then its bucket is scheduled by its due time, not after', async () => {
    const b = buckets({ bucketMs: 5, holdMs: 5_000 });
    b.add([retry('d1', 5_000)]);
    b.add([retry('d2', 20)]);
    await jest.advanceTimersByTimeAsync(20);
    expect(scheduled.map((s) => s.at - T0)).toEqual([20, 5_000]);
  });

  it('When the engine stops, then what is held is scheduled at once', async () => {
    const b = buckets();
    b.add([retry('d1', 40_000)]);
    await b.flush();
    expect(scheduled).toEqual([{ at: T0 + 40_000, deliveries: [['d1', 'wh_1']] }]);
    await jest.advanceTimersByTimeAsync(2_000);
    expect(scheduled).toHaveLength(1); // nothing scheduled twice
  });

  it('When scheduling fails, then the failure is reported with the number of retries it held (the sweep retakes them)', async () => {
    const b = buckets({ fail: true });
    b.add([retry('d1', 5_100), retry('d2', 5_200)]);
    await jest.advanceTimersByTimeAsync(1000);
    expect(failures).toEqual([2]);
  });
});
