/**
 * Tests run once. A test that bounds real time (a deadline, a latency, a pace) which a loaded machine can
 * stretch declares that bound (timingBound; memoryBound and killWindow for the proofs whose premise is
 * such a race), and only it may run again: at most twice, each failure printed before its
 * retry (logErrorsBeforeRetry), and .ci/run counts every test that ran more than once on its own line.
 *
 *   timingBound('answers within the 1 s fail-open bound').it('lets requests through promptly …', async () => …);
 *
 * Why a describe of its own: jest reads the retry count when a describe block starts (after its beforeAll
 * hooks), so setting it in that block's beforeAll and clearing it in its afterAll scopes it to this one test.
 */
import { afterAll, beforeAll, describe, it, jest } from '@jest/globals';

const RETRIES = 2;

type TestFn = () => unknown;

/**
 * The one way a test may run again: `kind` says what its proof depends on that load can stretch,
 * `bound` what exactly; both are in the test's name, so .ci/run's retried lines name them.
 */
function declaredRetry(kind: string, bound: string) {
  return {
    it(title: string, fn: TestFn, timeoutMs?: number): void {
      describe(`[${kind}: ${bound}]`, () => {
        beforeAll(() => { jest.retryTimes(RETRIES, { logErrorsBeforeRetry: true }); });
        afterAll(() => { jest.retryTimes(0); });
        it(title, fn as () => Promise<unknown>, timeoutMs);
      });
    },
  };
}

/** A bound on real time the test asserts (a deadline, a latency, a pace). */
export const timingBound = (bound: string) => declaredRetry('timing bound', bound);

/**
 * A bound on memory the test asserts, which holds only when each event reaches its memory cap before
 * its time limit: on a loaded machine the time limit can come first and the proof does not apply.
 */
export const memoryBound = (bound: string) => declaredRetry('memory bound', bound);

/**
 * Exactly once after a kill: the proof needs the kill to land inside a window the test opens (a held
 * request); on a loaded machine the window can close before the kill, and nothing is proved.
 */
export const killWindow = (window: string) => declaredRetry('exactly once after a kill', window);
