/**
 * How test files share a run (tests/support/alone.js, sequencer.js): a proof that measures a time
 * bound runs alone, other proofs one at a time beside the shared files, and the order the
 * sequencer gives keeps the proofs' lane busy without a worker waiting for it.
 */
import { describe, expect, it } from '@jest/globals';
import { laneOf } from '../support/alone.js';
import { interleave } from '../support/sequencer.js';

const proofs = { testEnvironmentOptions: { lane: 'proof' } };

/** Replays an order on `workers` workers as jest does (each free worker takes the next file); proofs wait for the lane. */
function replay(order: { f: string; s: number; lane: string }[], workers: number) {
  const free = Array.from({ length: workers }, () => 0);
  let laneFree = 0;
  let waited = 0;
  const spans: { f: string; start: number; end: number; lane: string }[] = [];
  for (const file of order) {
    const w = free.indexOf(Math.min(...free));
    let start = free[w];
    if (file.lane === 'proof') {
      waited += Math.max(0, laneFree - start);
      start = Math.max(start, laneFree);
      laneFree = start + file.s;
    }
    free[w] = start + file.s;
    spans.push({ f: file.f, start, end: start + file.s, lane: file.lane });
  }
  return { spans, waited, end: Math.max(...free) };
}

describe('test lanes', () => {
  it('When a file says @alone it runs alone, a proof takes the proofs\' lane unless it says @shared, and every other file is shared', () => {
    expect(laneOf({ alone: '' }, proofs)).toBe('alone');
    expect(laneOf({ alone: '' }, {})).toBe('alone');
    expect(laneOf({}, proofs)).toBe('proof');
    expect(laneOf({ shared: '' }, proofs)).toBe('shared');
    expect(laneOf({}, {})).toBe('shared');
  });

  it('When proofs under half the work and shared files are ordered for two workers, then no two proofs overlap, no worker waits for the lane, and the run ends no later than the longer of the lane and half the work', () => {
    const p = [100, 60, 30, 20, 10].map((s, i) => ({ f: `p${i}`, s, lane: 'proof' }));
    const sh = [80, 50, 40, 30, 25, 20, 15, 10, 10, 5, 5, 5, 5, 5].map((s, i) => ({ f: `s${i}`, s, lane: 'shared' }));
    const order = interleave(p, sh, 2);
    expect(order.map((x) => x.f).sort()).toEqual([...p, ...sh].map((x) => x.f).sort());
    const { spans, waited, end } = replay(order, 2);
    const lane = spans.filter((x) => x.lane === 'proof').sort((a, b) => a.start - b.start);
    for (let i = 1; i < lane.length; i++) expect(lane[i].start).toBeGreaterThanOrEqual(lane[i - 1].end);
    expect(waited).toBe(0);
    const work = [...p, ...sh].reduce((a, x) => a + x.s, 0);
    const laneWork = p.reduce((a, x) => a + x.s, 0);
    expect(end).toBeLessThanOrEqual(Math.max(laneWork, work / 2) + Math.max(...sh.map((x) => x.s)));
  });

  it('When there is one worker, then every file still comes once, proofs first while the lane is free', () => {
    const order = interleave([{ f: 'p', s: 5, lane: 'proof' }], [{ f: 's', s: 9, lane: 'shared' }], 1);
    expect(order.map((x) => x.f)).toEqual(['p', 's']);
  });
});
