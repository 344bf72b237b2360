/**
 * The order the run's files start in (jest.config.js `testSequencer`).
 *
 * Why: a file that runs alone (an `@alone` file: tests/support/alone.js) waits for every file
 * beside it to end, and the other worker idles meanwhile. So those start first, one after another.
 * The proofs, one at a time beside the shared files, come next, interleaved with the shared files:
 * the order is a simulation of the run on jest's workers (each free worker takes the next file),
 * where a proof comes next whenever the last one is due to have ended, and a shared file, longest
 * first, otherwise. So a worker seldom waits for the proofs' lock, the proofs never queue at the
 * end, and the run does not end on one long file. A file's time is its own seconds in CI's last
 * measured run (tests/support/file-times.json, written by `node scripts/ci/file-times.mjs …
 * --write`), else jest's cache of the last local run, else its size.
 *
 * Plain JavaScript: jest loads the sequencer outside its transform of the tests.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import SequencerModule from '@jest/test-sequencer';
import { extract, parse } from 'jest-docblock';
import { laneOf } from './alone.js';

const TIMES = JSON.parse(readFileSync(new URL('./file-times.json', import.meta.url), 'utf8'));

const pragmasOf = (path) => parse(extract(readFileSync(path, 'utf8')));

const Sequencer = SequencerModule.default ?? SequencerModule;

/**
 * Proofs and shared files in the order a run on `workers` workers would start them: whenever the
 * proofs' lane is free by the time a worker frees, the longest proof left; else the longest shared file.
 */
export function interleave(proofs, shared, workers) {
  const free = Array.from({ length: Math.max(1, workers) }, () => 0);
  const order = [];
  let laneFree = 0;
  let p = 0;
  let s = 0;
  while (p < proofs.length || s < shared.length) {
    const w = free.indexOf(Math.min(...free));
    if (p < proofs.length && (laneFree <= free[w] || s >= shared.length)) {
      const proof = proofs[p++];
      laneFree = Math.max(free[w], laneFree) + proof.s;
      free[w] = laneFree;
      order.push(proof);
    } else {
      const file = shared[s++];
      free[w] += file.s;
      order.push(file);
    }
  }
  return order;
}

export default class LaneSequencer extends Sequencer {
  constructor(options) {
    super(options);
    this.workers = options?.globalConfig?.maxWorkers ?? 1;
  }

  sort(tests) {
    const seconds = (test) => {
      const file = relative(test.context.config.rootDir, test.path);
      if (TIMES[file] !== undefined) return TIMES[file];
      const cached = this.time(test);
      if (cached !== undefined) return cached / 1000;
      return (test.context.hasteFS.getSize(test.path) ?? 0) / 1000; // about a second per kilobyte
    };
    const keyed = tests.map((test) => ({ test, lane: laneOf(pragmasOf(test.path), test.context.config), s: seconds(test) }));
    const lane = (name) => keyed.filter((k) => k.lane === name).sort((a, b) => b.s - a.s);
    return [...lane('alone'), ...interleave(lane('proof'), lane('shared'), this.workers)].map((k) => k.test);
  }
}
