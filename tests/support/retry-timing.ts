/**
 * Jest setup (setupFilesAfterEnv): a failed test is run again, at most twice, and every failure is
 * printed before its retry. Why: CI runs ~130 files on two cores, and a few tests bound real time
 * (sandbox deadlines, timeouts, paced engines) that a loaded machine can stretch past their bound.
 * A test that fails three times fails the run; a retried failure stays in the log to be fixed.
 */
import { jest } from '@jest/globals';

jest.retryTimes(2, { logErrorsBeforeRetry: true });
