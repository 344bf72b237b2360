/**
 * An operator's typo in `x-required-scopes` (a scope outside the catalogue) would make the
 * operation unreachable: no key can hold that scope. It is refused at start-up (loading the
 * contract) and by the contract lint (a Spectral rule of ours), each naming the operation and scope.
 */
import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadContract } from '../../http/contract.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

async function contractWithTypo(): Promise<{ file: string; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-contract-'));
  const text = await readFile(path.join(root, 'openapi.yaml'), 'utf8');
  const typo = text.replace('x-required-scopes: [contacts:write]', 'x-required-scopes: [contact:write]');
  expect(typo).not.toBe(text);
  const file = path.join(dir, 'openapi.yaml');
  await writeFile(file, typo);
  return { file, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

describe('scope names are checked against the catalogue', () => {
  it('When the shipped contract loads, then every required scope is in the catalogue', () => {
    expect(() => loadContract(path.join(root, 'openapi.yaml'), { requireScopes: true })).not.toThrow();
  });

  it('When an operation requires a scope outside the catalogue, then loading the contract (start-up) fails naming it', async () => {
    const { file, cleanup } = await contractWithTypo();
    try {
      expect(() => loadContract(file, { requireScopes: true })).toThrow(/PATCH \/v1\/contacts\/\{id\}.*requires scope "contact:write", which is not in the scope catalogue/);
    } finally {
      await cleanup();
    }
  });

  it('When an operation requires a scope outside the catalogue, then the contract lint fails naming it', async () => {
    const { file, cleanup } = await contractWithTypo();
    try {
      const spectral = path.join(root, 'node_modules', '.bin', 'spectral');
      const run = promisify(execFile)(spectral, ['lint', '--fail-severity=error', '--ruleset', path.join(root, '.spectral.yaml'), file], { cwd: root });
      const failure = await run.then(() => undefined, (e: { stdout: string }) => e);
      expect(failure).toBeDefined();
      expect(failure!.stdout).toMatch(/scopes-in-catalogue.*PATCH \/v1\/contacts\/\{id\} requires scope "contact:write"/);
    } finally {
      await cleanup();
    }
  }, 60_000);
});
