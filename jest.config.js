/** Jest in ESM mode (see ../shared/STACK.md): TypeScript through @swc/jest. */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } }],
  },
  testMatch: ['<rootDir>/tests/**/*.test.ts'],
  globalSetup: '<rootDir>/tests/support/global-setup.ts',
  globalTeardown: '<rootDir>/tests/support/global-teardown.ts',
  // A response that breaks the contract fails the test that caused it, naming operation, path and rule.
  setupFilesAfterEnv: ['<rootDir>/tests/support/response-violations-hook.ts'],
  testTimeout: 30000,
};
