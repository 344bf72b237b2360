/**
 * Jest in ESM mode (see ../shared/STACK.md): TypeScript through @swc/jest.
 *
 * Tests live by room (docs/testing.md): `tests/<room>/` mirrors a room of lib/ (tests/bot,
 * tests/broadcasts, …), `tests/<edge>/` an edge around it (tests/http, tests/channel,
 * tests/simulator, tests/contract, tests/jobs, tests/house), `tests/proofs/` the kills, faults,
 * fuzzing, real browsers and whole processes. Shared set-up is in tests/support.
 *
 * One project per layer: `rooms`, `edges` and `proofs`. `npm run test:fast` runs rooms and edges
 * (what a developer runs many times a day); `npm test` runs all three (CI). Each test file has a
 * database of its own (tests/support/test-environment.js), so files may run in parallel; one that
 * measures latency, contention or a time bound is marked `@alone` there, and proofs run one at a
 * time beside the others (tests/support/alone.js).
 */
import { readdirSync } from 'node:fs';

const EDGES = ['http', 'channel', 'simulator', 'contract', 'jobs', 'house'];
const LIB_ROOMS = readdirSync(new URL('./lib', import.meta.url), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
// A test outside every layer would never run: a file at tests/'s top or a folder no layer names stops the run.
const KNOWN = new Set([...LIB_ROOMS, ...EDGES, 'proofs', 'support', 'fixtures']);
const strays = readdirSync(new URL('./tests', import.meta.url), { withFileTypes: true })
  .filter((e) => (e.isDirectory() ? !KNOWN.has(e.name) : e.name.endsWith('.test.ts')))
  .map((e) => `tests/${e.name}`);
if (strays.length) throw new Error(`jest.config.js: ${strays.join(', ')} belong to no layer: move them under tests/<room>/ (a folder of lib/), an edge (${EDGES.join(', ')}) or tests/proofs/`);
const under = (dirs) => dirs.map((d) => `<rootDir>/tests/${d}/**/*.test.ts`);

const base = {
  // Node's, with a database of the test file's own (files run in parallel).
  testEnvironment: '<rootDir>/tests/support/test-environment.js',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } }],
  },
  // A response that breaks the contract fails the test that caused it, naming operation, path and rule.
  setupFilesAfterEnv: ['<rootDir>/tests/support/response-violations-hook.ts'],
  runtime: '<rootDir>/tests/support/runtime.cjs',
};

export default {
  // A global option: inside a project it would be ignored (5 s).
  testTimeout: 30000,
  // A handle some test left open (a pool, a timer, a child's pipe) must not keep the run from
  // ending once every file has reported: CI waits for the process.
  forceExit: true,
  // One process running every file in band grew past 5 GB by the end of CI: Node 20 never collects
  // an ESM test file's modules (nodejs/node#59118), and its collector's pauses broke timing-bound
  // tests late in the run. A worker is replaced by a fresh one whenever a file leaves it above this
  // (at 1.5 GB each major GC still marked tens of files' retained graphs: docs/testing.md).
  workerIdleMemoryLimit: '700MB',
  // CI's progress: which file runs, and the tallies so far (tests/support/progress-reporter.js).
  reporters: ['default', '<rootDir>/tests/support/progress-reporter.js'],
  // The files that run alone first, then the rest longest first (tests/support/sequencer.js).
  testSequencer: '<rootDir>/tests/support/sequencer.js',
  globalSetup: '<rootDir>/tests/support/global-setup.ts',
  globalTeardown: '<rootDir>/tests/support/global-teardown.ts',
  projects: [
    { ...base, displayName: 'rooms', testMatch: under(LIB_ROOMS) },
    { ...base, displayName: 'edges', testMatch: under(EDGES) },
    // A proof kills its own processes, stops its own databases or drives a browser: one proof runs
    // at a time, beside the shared files; one that measures a time bound says `@alone` and runs with
    // nothing beside it; one that kills only its own app's processes (a bot's sandbox, the build
    // process) and measures nothing another file's load could break says `@shared` (tests/support/alone.js).
    { ...base, displayName: 'proofs', testMatch: under(['proofs']), testEnvironmentOptions: { lane: 'proof' } },
  ],
};
