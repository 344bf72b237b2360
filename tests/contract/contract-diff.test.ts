/**
 * The breaking-change gate: the differ over fixture pairs of contracts (one pair per kind of
 * breaking and additive change, tests/fixtures/contract-diff/<kind>/{old,new}.yaml), the
 * versioning policy it feeds, the CI check and the release that writes the version, the
 * changelog entry and the snapshot.
 */
import { afterAll, describe, expect, it, jest } from '@jest/globals';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { diffContracts, requiredBump, type Change } from '../../scripts/contract/differ.js';
import { bump, changelogHas, judge } from '../../scripts/contract/policy.js';
import { main as diffMain } from '../../scripts/contract/diff.js';
import { release, setVersionText } from '../../scripts/contract/release.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const fixtures = path.join(root, 'tests', 'fixtures', 'contract-diff');
const read = (file: string) => parse(readFileSync(file, 'utf8')) as Record<string, any>;
const pair = (name: string) => diffContracts(read(path.join(fixtures, name, 'old.yaml')), read(path.join(fixtures, name, 'new.yaml')));

const tmp: string[] = [];
afterAll(() => {
  for (const d of tmp) rmSync(d, { recursive: true, force: true });
});

/** [fixture, rule expected, where it is reported (substring)] */
const BREAKING: Array<[string, string, string]> = [
  ['breaking-operation-removed', 'operation-removed', 'DELETE /v1/items/{id}'],
  ['breaking-parameter-removed', 'parameter-removed', 'GET /v1/items parameter query status'],
  ['breaking-response-property-removed', 'response-property-removed', '/note'],
  ['breaking-request-property-required', 'request-property-required', 'POST /v1/items request body/sku'],
  ['breaking-parameter-required', 'parameter-required', 'GET /v1/items parameter query region'],
  ['breaking-enum-narrowed', 'enum-narrowed', 'GET /v1/items parameter query status'],
  ['breaking-type-narrowed', 'type-narrowed', 'POST /v1/items request body/quantity'],
  ['breaking-limit-maxlength', 'limit-tightened', 'POST /v1/items request body/name'],
  ['breaking-limit-maximum', 'limit-tightened', 'GET /v1/items parameter query limit'],
  ['breaking-limit-minitems', 'limit-tightened', 'POST /v1/items request body/tags'],
  ['breaking-status-removed', 'status-removed', 'GET /v1/items/{id}'],
  ['breaking-status-changed', 'status-removed', 'POST /v1/items'],
  ['breaking-error-code-removed', 'error-code-removed', 'ErrorCode'],
  ['breaking-response-property-optional', 'response-property-optional', '/status'],
  ['breaking-response-type-widened', 'response-type-widened', '/name'],
  ['breaking-scope-required', 'scope-required', 'GET /v1/items/{id}'],
  ['breaking-operation-id-changed', 'operation-id-changed', 'GET /v1/items/{id}'],
  // One schema in requests and responses: null is additive where it is accepted, breaking where it is sent.
  ['breaking-shared-schema-widened', 'response-type-widened', '/status'],
];

const ADDITIVE: Array<[string, string, string]> = [
  ['additive-operation-added', 'operation-added', 'POST /v1/items/{id}/archive'],
  ['additive-parameter-added', 'parameter-added', 'GET /v1/items parameter query q'],
  ['additive-request-property-added', 'request-property-added', 'POST /v1/items request body/color'],
  ['additive-request-property-optional', 'request-property-optional', 'POST /v1/items request body/name'],
  ['additive-response-property-added', 'response-property-added', '/created_at'],
  ['additive-enum-widened', 'enum-widened', 'GET /v1/items parameter query status'],
  ['additive-type-widened', 'type-widened', 'POST /v1/items request body/quantity'],
  ['additive-limit-loosened', 'limit-loosened', 'POST /v1/items request body/name'],
  ['additive-status-added', 'status-added', 'DELETE /v1/items/{id}'],
  ['additive-error-code-added', 'error-code-added', 'ErrorCode'],
];

const summary = (changes: Change[]) => changes.map((c) => `${c.kind} ${c.rule} ${c.at}: ${c.message}`).join('\n');

describe('the differ', () => {
  it('When every fixture directory is listed, then each has a case here (no untested pair)', () => {
    const listed = new Set([...BREAKING, ...ADDITIVE].map(([name]) => name));
    const dirs = readdirSync(fixtures).filter((d) => d.startsWith('breaking-') || d.startsWith('additive-'));
    expect(dirs.filter((d) => !listed.has(d))).toEqual([]);
  });

  it.each(BREAKING)('When the pair %s is compared, then it is breaking (%s at %s)', (name, rule, at) => {
    const changes = pair(name);
    const hit = changes.find((c) => c.rule === rule && c.at.includes(at));
    expect({ hit, all: summary(changes) }).toMatchObject({ hit: { kind: 'breaking' } });
    expect(requiredBump(changes)).toBe('major');
  });

  it.each(ADDITIVE)('When the pair %s is compared, then it is additive only (%s at %s)', (name, rule, at) => {
    const changes = pair(name);
    const hit = changes.find((c) => c.rule === rule && c.at.includes(at));
    expect({ hit, all: summary(changes) }).toMatchObject({ hit: { kind: 'additive' } });
    expect(summary(changes.filter((c) => c.kind === 'breaking'))).toBe('');
    expect(requiredBump(changes)).toBe('minor');
  });

  it('When a schema shared by requests and responses widens, then the request side is additive and the response side breaking', () => {
    const changes = pair('breaking-shared-schema-widened');
    expect(changes.find((c) => c.rule === 'type-widened')).toMatchObject({ kind: 'additive', message: 'now also accepts null' });
    expect(changes.find((c) => c.rule === 'response-type-widened')).toMatchObject({ kind: 'breaking', message: 'may now be null' });
  });

  it('When a tightened limit is reported, then its message gives the old and new bound', () => {
    expect(pair('breaking-limit-maxlength').find((c) => c.rule === 'limit-tightened')!.message).toBe('maxLength 200 → 100');
    expect(pair('breaking-limit-maximum').find((c) => c.rule === 'limit-tightened')!.message).toBe('maximum 50 → 20');
    expect(pair('breaking-limit-minitems').find((c) => c.rule === 'limit-tightened')!.message).toBe('minItems 0 → 1');
  });

  it('When only a description changed, then the change is documentation (a patch)', () => {
    const changes = pair('docs-description-changed');
    expect(changes.map((c) => c.kind)).toEqual(['docs']);
    expect(requiredBump(changes)).toBe('patch');
  });

  it('When nothing changed, then there is nothing to report', () => {
    expect(pair('none-identical')).toEqual([]);
  });

  it('When the shipped contract is compared with its released snapshot, then it has no breaking change', () => {
    const changes = diffContracts(read(path.join(root, 'contract/released/openapi.yaml')), read(path.join(root, 'openapi.yaml')));
    expect(summary(changes.filter((c) => c.kind === 'breaking'))).toBe('');
  });
});

describe('the versioning policy and the CI gate', () => {
  const oldDoc = () => read(path.join(fixtures, 'breaking-operation-removed', 'old.yaml'));
  const breakingDoc = (version: string) => ({ ...read(path.join(fixtures, 'breaking-operation-removed', 'new.yaml')), info: { title: 'Differ fixture', version } });
  const additiveDoc = (version: string) => ({ ...read(path.join(fixtures, 'additive-operation-added', 'new.yaml')), info: { title: 'Differ fixture', version } });

  it('When a breaking change keeps the version, then the gate refuses it and says what to do', () => {
    const verdict = judge(oldDoc(), breakingDoc('1.0.0'), '');
    expect(verdict.problems.join('\n')).toMatch(/1 breaking change\(s\) against the released 1\.0\.0: they need info\.version 2\.0\.0 and a CHANGELOG\.md entry .*npm run contract:release/);
  });

  it('When a breaking change comes with a minor bump, then the gate refuses the version', () => {
    expect(judge(oldDoc(), breakingDoc('1.1.0'), '## 1.1.0\n').problems.join()).toMatch(/1\.1\.0 is not a legal step from 1\.0\.0 for breaking changes \(allowed: 2\.0\.0\)/);
  });

  it('When a breaking change comes with the major bump but no changelog entry, then the gate refuses it', () => {
    expect(judge(oldDoc(), breakingDoc('2.0.0'), '# Changelog\n').problems.join()).toMatch(/CHANGELOG\.md has no entry for 2\.0\.0/);
  });

  it('When a breaking change comes with the major bump and its entry, then the gate passes', () => {
    expect(judge(oldDoc(), breakingDoc('2.0.0'), '# Changelog\n\n## 2.0.0 (2026-11-23)\n').problems).toEqual([]);
  });

  it('When an additive change keeps the version (not yet released), then the gate passes and lists it', () => {
    const verdict = judge(oldDoc(), additiveDoc('1.0.0'), '');
    expect(verdict.problems).toEqual([]);
    expect(verdict.needs).toBe('minor');
  });

  it('When the version moves without a change, or skips a step, then the gate refuses it', () => {
    expect(judge(oldDoc(), { ...oldDoc(), info: { title: 'Differ fixture', version: '1.0.1' } }, '## 1.0.1\n').problems.join()).toMatch(/did not change/);
    expect(judge(oldDoc(), additiveDoc('1.2.0'), '## 1.2.0\n').problems.join()).toMatch(/allowed: 2\.0\.0, 1\.1\.0/);
    expect(judge(oldDoc(), additiveDoc('one'), '').problems.join()).toMatch(/not MAJOR\.MINOR\.PATCH/);
  });

  it('When versions are bumped and changelogs read, then the helpers follow semver', () => {
    expect([bump('1.4.2', 'major'), bump('1.4.2', 'minor'), bump('1.4.2', 'patch')]).toEqual(['2.0.0', '1.5.0', '1.4.3']);
    expect(changelogHas('## [2.0.0] - 2026', '2.0.0')).toBe(true);
    expect(changelogHas('## 2.0.0 (2026-11-23)', '2.0.0')).toBe(true);
    expect(changelogHas('## 12.0.0', '2.0.0')).toBe(false);
  });

  it('When contract:diff --check runs on a breaking pair, then it exits 1 naming the change; without --check it only lists', () => {
    const dir = path.join(fixtures, 'breaking-operation-removed');
    const out: string[] = [];
    const log = jest.spyOn(console, 'log').mockImplementation((line: string) => void out.push(line));
    const err = jest.spyOn(console, 'error').mockImplementation((line: string) => void out.push(line));
    try {
      const args = ['--released', path.join(dir, 'old.yaml'), '--contract', path.join(dir, 'new.yaml'), '--changelog', path.join(dir, 'none.md')];
      expect(diffMain([...args, '--check'])).toBe(1);
      expect(out.join('\n')).toContain('! DELETE /v1/items/{id}: operation deleteItem removed [operation-removed]');
      expect(out.join('\n')).toMatch(/Versioning policy: 1 breaking change/);
      expect(diffMain(args)).toBe(0);
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
  });
});

describe('contract:release', () => {
  function workspace(kind: string) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-release-'));
    tmp.push(dir);
    copyFileSync(path.join(fixtures, kind, 'new.yaml'), path.join(dir, 'openapi.yaml'));
    copyFileSync(path.join(fixtures, kind, 'old.yaml'), path.join(dir, 'released.yaml'));
    writeFileSync(path.join(dir, 'CHANGELOG.md'), '# Changelog of the API contract\n\n## 1.0.0 (2026-11-22)\n\nFirst release.\n');
    const opts = { contract: path.join(dir, 'openapi.yaml'), released: path.join(dir, 'released.yaml'), changelog: path.join(dir, 'CHANGELOG.md'), date: '2026-11-23', log: () => {} };
    return { dir, opts };
  }

  it('When a breaking change is released, then info.version becomes 2.0.0, the changelog lists it above 1.0.0, the snapshot is refreshed and the gate passes', () => {
    const { dir, opts } = workspace('breaking-operation-removed');
    const before = readFileSync(opts.contract, 'utf8');
    expect(release(opts)).toEqual({ version: '2.0.0', needs: 'major' });
    const after = readFileSync(opts.contract, 'utf8');
    expect(after).toBe(before.replace('version: 1.0.0', 'version: 2.0.0'));
    const changelog = readFileSync(opts.changelog, 'utf8');
    expect(changelog).toMatch(/## 2\.0\.0 \(2026-11-23\)\n\n### Breaking changes\n\n- `DELETE \/v1\/items\/\{id\}`: operation deleteItem removed \(operation-removed\)\n/);
    expect(changelog.indexOf('## 2.0.0')).toBeLessThan(changelog.indexOf('## 1.0.0'));
    expect(readFileSync(path.join(dir, 'released.yaml'), 'utf8')).toBe(after);
    expect(judge(read(path.join(dir, 'released.yaml')), read(opts.contract), changelog).problems).toEqual([]);
  });

  it('When an additive change is released, then the minor version moves; a documentation change moves the patch', () => {
    expect(release(workspace('additive-parameter-added').opts).version).toBe('1.1.0');
    const docs = workspace('docs-description-changed');
    expect(release(docs.opts).version).toBe('1.0.1');
    expect(readFileSync(docs.opts.changelog, 'utf8')).toContain('### Documentation');
  });

  it('When the breaking change was only released, not yet merged, then the old snapshot still fails the gate (the check is real)', () => {
    const { opts } = workspace('breaking-parameter-removed');
    expect(judge(read(opts.released), read(opts.contract), readFileSync(opts.changelog, 'utf8')).problems).toHaveLength(1);
  });

  it('When the operator already set a legal version (a major for additive changes), then the release keeps it', () => {
    const { opts } = workspace('additive-parameter-added');
    writeFileSync(opts.contract, readFileSync(opts.contract, 'utf8').replace('version: 1.0.0', 'version: 2.0.0'));
    expect(release(opts).version).toBe('2.0.0');
    expect(readFileSync(opts.changelog, 'utf8')).toContain('## 2.0.0 (2026-11-23)');
  });

  it('When nothing changed, then nothing is written', () => {
    const { opts } = workspace('none-identical');
    const before = readFileSync(opts.changelog, 'utf8');
    expect(release(opts)).toEqual({ needs: 'none' });
    expect(readFileSync(opts.changelog, 'utf8')).toBe(before);
  });

  it('When info.version is rewritten, then only that scalar changes (quoted or not)', () => {
    expect(setVersionText("info:\n  title: x # keep\n  version: '1.0.0'\npaths: {}\n", '1.1.0')).toBe("info:\n  title: x # keep\n  version: 1.1.0\npaths: {}\n");
  });
});
