/**
 * Which test files run alone, in one place: the test environment takes the run's exclusive lock
 * for them (test-environment.js) and the sequencer starts them first (sequencer.js).
 * Plain JavaScript: both load outside jest's transform of the tests.
 */

/** `@alone` in the file's first docblock, or a project that runs its files alone (proofs) unless the file says `@shared`. */
export function runsAlone(pragmas, projectConfig) {
  if ('alone' in pragmas) return true;
  return projectConfig?.testEnvironmentOptions?.alone === true && !('shared' in pragmas);
}
