/**
 * Tests run once. A test that bounds real time (a deadline, a latency, a pace) which a loaded machine can
 * stretch declares that bound, and only it may run again: at most twice, each failure printed before its
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

export function timingBound(bound: string) {
  return {
    it(title: string, fn: TestFn, timeoutMs?: number): void {
      describe(`[timing bound: ${bound}]`, () => {
        beforeAll(() => { jest.retryTimes(RETRIES, { logErrorsBeforeRetry: true }); });
        afterAll(() => { jest.retryTimes(0); });
        it(title, fn as () => Promise<unknown>, timeoutMs);
      });
    },
  };
}
