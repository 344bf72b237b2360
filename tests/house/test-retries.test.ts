/**
 * Green means green: a test runs once unless it declares the real-time bound it asserts, or the race
 * its proof's premise depends on (tests/support/retry-timing.ts). A jest.retryTimes anywhere else,
 * or in jest's set-up files, would let a failing test pass on a second try unnoticed.
 */
import { describe, expect, it } from '@jest/globals';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

function testSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testSources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []);
}

describe('retries are declared, never global', () => {
  it('When a test file or set-up asks jest to retry, then it is only through a declaration of retry-timing.ts', () => {
    const offenders = testSources(join(root, 'tests'))
      .filter((f) => !f.endsWith(join('support', 'retry-timing.ts')) && !f.endsWith('test-retries.test.ts'))
      .filter((f) => /retryTimes\s*\(/.test(readFileSync(f, 'utf8')));
    expect(offenders).toEqual([]);
    expect(readFileSync(join(root, 'jest.config.js'), 'utf8')).not.toMatch(/retry-timing/);
  });

  it('When a test declares a bound (timing, memory, or a kill window), then it names the bound', () => {
    const unnamed = testSources(join(root, 'tests')).flatMap((f) =>
      [...readFileSync(f, 'utf8').matchAll(/(?:timingBound|memoryBound|killWindow)\(\s*(['"`])(.*?)\1\s*\)/g)].filter((m) => m[2].trim().length < 8).map(() => f));
    expect(unnamed).toEqual([]);
  });
});
