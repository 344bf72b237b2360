/**
 * The order the run's files start in (jest.config.js `testSequencer`).
 *
 * Why: a file that runs alone (a proof, an `@alone` file: tests/support/test-environment.js) waits
 * for every file beside it to end, and the other worker idles meanwhile. Scattered through the run,
 * each such file cost a worker a room file's remaining time. So the files that run alone start
 * first, one after another, and the shared files then fill both workers, longest first so that the
 * run does not end on one long file. A file's time is its own seconds in CI's last measured run
 * (tests/support/file-times.json, written by `node scripts/ci/file-times.mjs … --write`), else
 * jest's cache of the last local run, else its size.
 *
 * Plain JavaScript: jest loads the sequencer outside its transform of the tests.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import SequencerModule from '@jest/test-sequencer';
import { extract, parse } from 'jest-docblock';
import { runsAlone } from './alone.js';

const TIMES = JSON.parse(readFileSync(new URL('./file-times.json', import.meta.url), 'utf8'));

const pragmasOf = (path) => parse(extract(readFileSync(path, 'utf8')));

const Sequencer = SequencerModule.default ?? SequencerModule;

export default class AloneFirstSequencer extends Sequencer {
  sort(tests) {
    const seconds = (test) => {
      const file = relative(test.context.config.rootDir, test.path);
      if (TIMES[file] !== undefined) return TIMES[file];
      const cached = this.time(test);
      if (cached !== undefined) return cached / 1000;
      return (test.context.hasteFS.getSize(test.path) ?? 0) / 1000; // about a second per kilobyte
    };
    const keyed = tests.map((test) => ({ test, alone: runsAlone(pragmasOf(test.path), test.context.config), s: seconds(test) }));
    keyed.sort((a, b) => (a.alone !== b.alone ? (a.alone ? -1 : 1) : b.s - a.s));
    return keyed.map((k) => k.test);
  }
}
