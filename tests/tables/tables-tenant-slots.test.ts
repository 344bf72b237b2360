/**
 * The tenant pool's fair shares (lib/tables/tenant-pool.ts, issue 44 item 5), without a database:
 * shares shrink as projects come, the fewest-holding waiter goes first, and the reserve is kept for
 * API and bot work of projects holding nothing. tests/proofs/tables-fair-share.test.ts shows it through
 * HTTP against PostgreSQL.
 */
import { describe, expect, it } from '@jest/globals';
import { FairShares, reserveOf } from '../../lib/platform/fair-shares.js';

const API = { reserve: true };
const DDL = { reserve: false };

/** Starts `n` acquisitions and reports which have been granted so far. */
function take(s: FairShares, project: string, n: number, opts = API, timeoutMs = 10_000) {
  const granted: boolean[] = [];
  const done = Array.from({ length: n }, (_, i) => s.acquire(project, timeoutMs, opts).then((ok) => (granted[i] = ok)));
  return { granted: () => granted.filter(Boolean).length, done: Promise.all(done) };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('fair shares of the tenant slots', () => {
  it('reserves a fifth of the slots, at least one, none of a single slot', () => {
    expect([1, 2, 5, 10, 20].map(reserveOf)).toEqual([0, 1, 1, 2, 4]);
  });

  it('When three projects want 4 slots each of 10, then a fourth project still gets one at once', async () => {
    const s = new FairShares(10, 4);
    const x = take(s, 'x', 4, DDL);
    const y = take(s, 'y', 4, DDL);
    const z = take(s, 'z', 4, DDL);
    await tick();
    // x and y took 4 each while free slots stayed above the reserve; z holds none yet, and DDL may not use the reserve.
    expect([x.granted(), y.granted(), z.granted()]).toEqual([4, 4, 0]);
    const b = take(s, 'b', 1, API);
    await tick();
    expect(b.granted()).toBe(1);
    expect(s.heldBy('b')).toBe(1);
  });

  it('When a slot is freed, then the waiting project that holds none gets it before one that holds some', async () => {
    const s = new FairShares(4, 4, 0);
    const x = take(s, 'x', 6);
    await tick();
    expect(x.granted()).toBe(4);
    const b = take(s, 'b', 1);
    await tick();
    expect(b.granted()).toBe(0);
    s.release('x');
    await tick();
    expect([x.granted(), b.granted()]).toEqual([4, 1]);
    // Two projects active now: x's share is 2, so with 3 it takes no more until it is below that.
    expect(s.share()).toBe(2);
    s.release('x');
    await tick();
    expect([s.heldBy('x'), x.granted()]).toEqual([2, 4]);
    s.release('x');
    await tick();
    expect([s.heldBy('x'), x.granted()]).toEqual([2, 5]);
  });

  it('When the shared slots are taken, then the reserve goes to API work of projects holding none, never to DDL or to a project holding one', async () => {
    const s = new FairShares(10, 8);
    take(s, 'x', 8, DDL);
    await tick();
    expect(s.heldBy('x')).toBe(8);
    const more = take(s, 'x', 1, API, 50);
    const ddl = take(s, 'w', 1, DDL, 50);
    const api = take(s, 'v', 2, API, 50);
    await tick();
    expect([more.granted(), ddl.granted(), api.granted()]).toEqual([0, 0, 1]);
    await Promise.all([more.done, ddl.done, api.done]);
    expect([more.granted(), ddl.granted(), api.granted()]).toEqual([0, 0, 1]);
  });

  it('When a waiter gives up, then false, and the slots it did not take go to the others', async () => {
    const s = new FairShares(2, 2, 0);
    const x = take(s, 'x', 2);
    await tick();
    const late = take(s, 'y', 1, API, 20);
    await late.done;
    expect(late.granted()).toBe(0);
    s.release('x');
    s.release('x');
    const again = take(s, 'x', 2);
    await tick();
    expect([x.granted(), again.granted()]).toEqual([2, 2]);
  });

  describe('borrowing (the channel notifications)', () => {
    it('When many projects are active but one alone has work waiting, then it uses the idle slots up to its cap, not only its share', async () => {
      const s = new FairShares(10, 5, 2, { borrowUpTo: 5 });
      // Nine projects hold one slot each for a moment: the share is 1 (10 slots / 10 projects).
      for (let i = 0; i < 9; i++) void s.acquire(`quiet${i}`, 1000, API);
      const busy = take(s, 'busy', 8);
      await tick();
      expect(s.share()).toBe(1);
      expect(busy.granted()).toBe(1);
      for (let i = 0; i < 9; i++) s.release(`quiet${i}`);
      await tick();
      // The quiet ones left: alone now, it takes up to its cap (5), not its share of the moment.
      expect(busy.granted()).toBe(5);
    });

    it('When a project has borrowed past its share, then each freed slot goes to the other waiting projects first', async () => {
      const s = new FairShares(6, 5, 0, { borrowUpTo: 5 });
      void s.acquire('other', 1000, API);
      const busy = take(s, 'busy', 8);
      await tick();
      // Its share is 3 (6 slots / 2 projects); it borrows the rest nobody waits for, up to its cap.
      expect(busy.granted()).toBe(5);
      const other = take(s, 'other', 2);
      const newcomer = take(s, 'new', 1);
      await tick();
      expect([other.granted(), newcomer.granted()]).toEqual([0, 0]);
      s.release('busy');
      await tick();
      expect([newcomer.granted(), other.granted(), busy.granted()]).toEqual([1, 0, 5]);
      s.release('busy');
      await tick();
      expect([other.granted(), busy.granted()]).toEqual([1, 5]);
    });

    it('Without borrowing, a project is held to its share however idle the rest is (the tenant pool)', async () => {
      const s = new FairShares(10, 5, 2);
      const q = take(s, 'quiet', 1);
      const busy = take(s, 'busy', 8);
      await tick();
      expect([q.granted(), busy.granted(), s.share()]).toEqual([1, 5, 5]);
    });
  });
});
