/**
 * Jest in ESM mode (see ../shared/STACK.md): TypeScript through @swc/jest.
 *
 * Two projects. `proofs` are the tests that prove the service under abuse and cost the most time:
 * kill -9 and restarts of a service process, faults (terminated backends, database outages),
 * fuzzing, real browsers, two instances, `npm start`. `fast` is everything else: the unit and API
 * tests a developer runs many times a day (`npm run test:fast`, three workers). `npm test` runs
 * both (CI). Each test file has a database of its own (tests/support/test-environment.js), so files
 * may run in parallel; one that measures latency or contention is marked `@alone` there.
 */
const PROOFS = [
  // kill -9, restarts and stops of a service process
  'crash-mid-send', 'crash-proofs', 'broadcast-crash', 'restart', 'shutdown', 'npm-start', 'embedded-postgres', 'webhook-restart',
  // a service started in the background by a shell that exits, and one told to stop with its parent
  'parent-exit',
  // kill -9 of a standalone simulator process (its owed statuses)
  'simulator-owed-statuses',
  // the service started as a user starts it: the README pasted after `npm start`, busy ports at start-up
  'readme', 'busy-ports',
  // faults: backends terminated, the database stopped
  'database-outage', 'job-runner-faults', 'terminate-during-sends',
  // a primary that refuses writes (its sessions cut, as a read-only restart or a demotion cuts them)
  'read-only-database',
  // commits that wait for a synchronous standby that is not there (a PostgreSQL of the file's own)
  'sync-commit-stall', 'keyed-insert-commit-stall',
  // fuzzing
  'contract-fuzz', 'simulator-meta-differential',
  // real browsers
  'api-reference', 'browser-smoke', 'dashboard-browser', 'oauth-browser', 'console-a11y-browser', 'groups-browser', 'inbox-live-browser',
  // two instances on one database; three started at once on an empty one
  'two-instances', 'bot-two-instances', 'fresh-start',
  // the service as a process exporting traces to a collector of the test's own
  'traces',
  // the container image started, probed and stopped (where Docker runs)
  'container-image',
  // a backup of a running instance restored into a new PostgreSQL cluster and served by a new instance
  'backup-restore',
  // point-in-time recovery with pgBackRest: a cluster of its own archived, backed up and restored to a named point
  'pitr',
  // the HA topology (Patroni, etcd, Sentinel, HAProxy): the PostgreSQL primary and the Redis master killed
  'failover',
  // scripts/ha/cluster.sh's status, start, stop and supervisor; etcd's quorum lost; one PostgreSQL node left
  'ha-cluster',
];
const proofPaths = PROOFS.map((name) => `<rootDir>/tests/${name}.test.ts`);

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
};

export default {
  // A global option: inside a project it would be ignored (5 s).
  testTimeout: 30000,
  // A handle some test left open (a pool, a timer, a child's pipe) must not keep the run from
  // ending once every file has reported: CI waits for the process.
  forceExit: true,
  // One process running every file in band grew past 5 GB by the end of CI (each file loads its own
  // modules), and its collector's pauses broke timing-bound tests late in the run. `npm test` runs
  // one worker instead, replaced by a fresh one whenever a file leaves it above this.
  workerIdleMemoryLimit: '1500MB',
  // CI's progress: which file runs, and the tallies so far (tests/support/progress-reporter.js).
  reporters: ['default', '<rootDir>/tests/support/progress-reporter.js'],
  globalSetup: '<rootDir>/tests/support/global-setup.ts',
  globalTeardown: '<rootDir>/tests/support/global-teardown.ts',
  projects: [
    {
      ...base,
      displayName: 'fast',
      testMatch: ['<rootDir>/tests/**/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', ...PROOFS.map((name) => `/tests/${name}\\.test\\.ts$`)],
    },
    // A proof kills processes, stops databases or drives a browser: it runs with no other file beside it
    // (the environment takes the run's exclusive lock, as for `@alone`), while fast files share the workers.
    { ...base, displayName: 'proofs', testMatch: proofPaths, testEnvironmentOptions: { alone: true } },
  ],
};
