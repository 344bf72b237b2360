/**
 * How a test file shares the run, in one place: the test environment takes the run's locks for it
 * (test-environment.js) and the sequencer orders the files by it (sequencer.js).
 * - `alone`: nothing else runs beside it. A file that measures latency, contention or a time bound
 *   on this machine's CPU (its first docblock says `@alone`).
 * - `proof`: a proof (the `proofs` project's files) kills a service process, stops its own
 *   databases or drives a browser. One proof runs at a time, beside the shared files: none of them
 *   touches what another made, and one proof's load is what the machine's other core can carry.
 * - `shared`: every other file, and a proof whose docblock says `@shared`: it kills nothing but
 *   the processes of its own app (a bot's sandbox, the build process, a server of its own), stops
 *   no database, drives no browser, and measures no time another file's load could break; its
 *   docblock says why.
 * Plain JavaScript: both load outside jest's transform of the tests.
 */

/** The file's lane: `@alone` in its first docblock, a proof unless it says `@shared`, else shared. */
export function laneOf(pragmas, projectConfig) {
  if ('alone' in pragmas) return 'alone';
  if (projectConfig?.testEnvironmentOptions?.lane === 'proof' && !('shared' in pragmas)) return 'proof';
  return 'shared';
}
