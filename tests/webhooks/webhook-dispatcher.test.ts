/**
 * The delivery queue after a restart: the start-up sweep queues overdue deliveries unclaimed
 * while the retry jobs claim the same rows. A claimed item must win over a queued unclaimed one
 * (before, it was dropped as a duplicate and its claim sat unused until the lease ran out).
 */
import { describe, expect, it } from '@jest/globals';
import { Dispatcher } from '../../lib/webhooks/dispatcher.js';

interface Item {
  id: string;
  webhookId: string;
  claim?: { leaseUntil: number };
}

/** One slot; an item `held` says waits until `release`; `ran` lists the items in the order they ran. */
function gatedDispatcher(held: (item: Item) => boolean) {
  const ran: Item[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const d = new Dispatcher<Item>({
    perWebhook: 1,
    max: 1,
    maxQueued: 10,
    onError: () => undefined,
    run: async (item) => {
      if (held(item)) await gate;
      ran.push(item);
    },
  });
  return { d, ran, release };
}

describe('delivery queue', () => {
  it('When a claimed item arrives for an id queued unclaimed, then the attempt runs with the claim', async () => {
    const { d, ran, release } = gatedDispatcher((item) => item.id === 'busy'); // holds the only slot so the next ones stay queued
    expect(d.enqueue({ id: 'busy', webhookId: 'w' })).toBe(true);
    expect(d.enqueue({ id: 'dlv_1', webhookId: 'w' })).toBe(true); // the sweep's, unclaimed
    expect(d.enqueue({ id: 'dlv_1', webhookId: 'w', claim: { leaseUntil: 1 } })).toBe(true); // the retry job's
    expect(d.enqueue({ id: 'dlv_1', webhookId: 'w' })).toBe(false); // a later unclaimed duplicate changes nothing
    release();
    await d.idle();
    expect(ran.filter((i) => i.id === 'dlv_1')).toEqual([{ id: 'dlv_1', webhookId: 'w', claim: { leaseUntil: 1 } }]);
  });

  it('When a claimed item arrives for an id running unclaimed, then it runs after it; stop returns the queued items', async () => {
    const { d, ran, release } = gatedDispatcher((item) => !item.claim);
    expect(d.enqueue({ id: 'dlv_2', webhookId: 'w' })).toBe(true); // starts at once, unclaimed
    expect(d.enqueue({ id: 'dlv_2', webhookId: 'w' })).toBe(false); // an unclaimed duplicate is refused
    expect(d.enqueue({ id: 'dlv_2', webhookId: 'w', claim: { leaseUntil: 5 } })).toBe(true); // the claim holder runs next
    expect(d.enqueue({ id: 'dlv_2', webhookId: 'w', claim: { leaseUntil: 4 } })).toBe(false); // an older claim changes nothing
    release();
    await d.idle();
    expect(ran.map((i) => i.claim?.leaseUntil ?? null)).toEqual([null, 5]);

    const blocked = new Dispatcher<Item>({ perWebhook: 1, max: 1, maxQueued: 10, onError: () => undefined, run: () => new Promise(() => undefined) });
    blocked.enqueue({ id: 'a', webhookId: 'w', claim: { leaseUntil: 1 } });
    blocked.enqueue({ id: 'b', webhookId: 'w', claim: { leaseUntil: 1 } });
    blocked.enqueue({ id: 'c', webhookId: 'v', claim: { leaseUntil: 1 } });
    const { dropped } = blocked.stop();
    expect(dropped.map((i) => i.id).sort()).toEqual(['b', 'c']);
    expect(blocked.enqueue({ id: 'd', webhookId: 'w', claim: { leaseUntil: 1 } })).toBe(false);
  });
});
