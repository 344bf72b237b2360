/** Jest setup (setupFilesAfterEnv): a test whose requests got a response that breaks the contract fails, saying where. */
import { afterEach } from '@jest/globals';
import { takeViolations, violationsMessage } from './response-violations.js';

afterEach(() => {
  const violations = takeViolations();
  if (violations.length > 0) throw new Error(violationsMessage(violations));
});
