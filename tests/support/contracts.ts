/**
 * The shipped contracts for in-process test apps, without parsing their YAML in every test file.
 * Parsing openapi.yaml and its siblings costs about half a second per app (each jest test file
 * loads its modules afresh, so nothing parsed survives from one file to the next). Here each
 * document is read from a JSON copy in the temp folder named by the SHA-256 of the YAML text, so a
 * changed contract is never served stale; the first file to need one writes it (atomically). A copy
 * is only kept when JSON represents the parsed document exactly. The operations are indexed with
 * the same checks as at start-up (contractOf).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parse } from 'yaml';
import { contractOf, type Contract } from '../../http/contract.js';
import { SHIPPED_CONTRACTS } from '../../http/contracts.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';

const CACHE_DIR = path.join(os.tmpdir(), 'svc-test-contracts');

function parsedDocument(file: string): Record<string, any> {
  const text = readFileSync(file, 'utf8');
  const copy = path.join(CACHE_DIR, `${createHash('sha256').update(text).digest('hex')}.json`);
  try {
    return JSON.parse(readFileSync(copy, 'utf8'));
  } catch {
    /* not written yet (or unreadable): parse the YAML */
  }
  const document = parse(text) as Record<string, any>;
  const json = JSON.stringify(document);
  if (isDeepStrictEqual(JSON.parse(json), document)) {
    try {
      mkdirSync(CACHE_DIR, { recursive: true });
      const tmp = `${copy}.${process.pid}.${Math.random().toString(36).slice(2)}`;
      writeFileSync(tmp, json);
      renameSync(tmp, copy);
    } catch {
      /* a read-only temp folder: parse again next time */
    }
  }
  return document;
}

const load = ({ file, requireScopes }: { file: string; requireScopes: boolean }): Contract => {
  const full = path.join(PROJECT_ROOT, file);
  return contractOf(parsedDocument(full), full, { requireScopes });
};

/** One shipped contract, a fresh copy each call (what http/contracts.ts's loaders give, without the YAML parse). */
export const shippedContract = (which: keyof typeof SHIPPED_CONTRACTS): Contract => load(SHIPPED_CONTRACTS[which]);

/** The three shipped contracts, as createServices takes them. */
export const shippedContracts = () => ({
  contract: shippedContract('public'),
  adminContract: shippedContract('admin'),
  runtimeContract: shippedContract('runtime'),
});
