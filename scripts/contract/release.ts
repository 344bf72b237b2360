/**
 * `npm run contract:release [-- --date YYYY-MM-DD] [--dry-run]`: releases the contract.
 * From the diff against the last release (contract/released/openapi.yaml) it picks the version
 * step the policy asks for (major for breaking, minor for additive, patch for documentation),
 * writes it into openapi.yaml's info.version (that line only), adds the CHANGELOG.md entry listing
 * the changes, and refreshes the snapshot. An operator may edit the entry afterwards (a migration
 * note under a breaking change is welcome); CI then checks the policy with `contract:diff --check`.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMap, isScalar, parseDocument } from 'yaml';
import { groupChanges, type Change } from './differ.js';
import { CHANGELOG, CONTRACT, RELEASED, ROOT, bump, changelogHas, judge, readChangelog, readYaml, type Bump } from './policy.js';

const HEADER = `# Changelog of the API contract

Every release of \`openapi.yaml\` (the public \`/v1\` API), newest first, written by
\`npm run contract:release\` from the differ (\`npm run contract:diff\`). Versioning policy: README,
"Versioning of the contract". Breaking changes bump the major version, additive ones the minor,
documentation the patch; the \`/v1\` path stays.
`;

/** The contract text with info.version replaced, everything else byte for byte. */
export function setVersionText(source: string, version: string): string {
  const doc = parseDocument(source);
  const info = doc.get('info', true);
  const node = isMap(info) ? info.get('version', true) : undefined;
  if (!isScalar(node) || !node.range) throw new Error('openapi.yaml has no info.version to update');
  const [start, end] = node.range;
  return source.slice(0, start) + version + source.slice(end);
}

const code = (at: string) => (at.startsWith('(') ? at : `\`${at}\``);

export function changelogEntry(version: string, date: string, changes: Change[]): string {
  const lines = [`## ${version} (${date})`, ''];
  const groups: Array<[Change['kind'], string]> = [['breaking', 'Breaking changes'], ['additive', 'Added'], ['docs', 'Documentation']];
  for (const [kind, title] of groups) {
    const group = changes.filter((c) => c.kind === kind);
    if (!group.length) continue;
    lines.push(`### ${title}`, '');
    for (const c of groupChanges(group)) {
      lines.push(c.places.length > 1 ? `- ${c.message} (${c.rule}), at ${c.places.length} places: ${c.places.map(code).join(', ')}` : `- ${code(c.at)}: ${c.message} (${c.rule})`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

/** The changelog with the entry placed above the newest one. */
export function insertEntry(changelog: string, entry: string): string {
  const text = changelog.trim() ? changelog : HEADER;
  const at = text.search(/^## /m);
  return at < 0 ? `${text.trimEnd()}\n\n${entry}` : `${text.slice(0, at)}${entry}\n${text.slice(at)}`;
}

export interface ReleaseOptions {
  contract?: string;
  released?: string;
  changelog?: string;
  date?: string;
  dryRun?: boolean;
  log?: (line: string) => void;
}

export function release(opts: ReleaseOptions = {}): { version?: string; needs: Bump | 'none' } {
  const contract = path.resolve(ROOT, opts.contract ?? CONTRACT);
  const released = path.resolve(ROOT, opts.released ?? RELEASED);
  const changelogFile = path.resolve(ROOT, opts.changelog ?? CHANGELOG);
  const log = opts.log ?? console.log;
  const changelog = readChangelog(changelogFile);
  const verdict = judge(readYaml(released), readYaml(contract), changelog);
  if (verdict.needs === 'none') {
    log(`Nothing to release: ${path.relative(ROOT, contract)} equals the released ${verdict.releasedVersion}.`);
    return { needs: 'none' };
  }
  // A version the operator already set is kept when the policy allows it (a major for additive
  // changes, say); otherwise the least legal step.
  const chosen = verdict.currentVersion !== verdict.releasedVersion && !verdict.problems.some((p) => p.startsWith('info.version'));
  const version = chosen ? verdict.currentVersion : bump(verdict.releasedVersion, verdict.needs);
  const date = opts.date ?? new Date().toISOString().slice(0, 10);
  log(`Releasing ${version} (${verdict.needs}: ${verdict.changes.length} change(s) since ${verdict.releasedVersion}).`);
  if (opts.dryRun) return { version, needs: verdict.needs };
  const source = readFileSync(contract, 'utf8');
  writeFileSync(contract, setVersionText(source, version));
  if (!changelogHas(changelog, version)) writeFileSync(changelogFile, insertEntry(changelog, changelogEntry(version, date, verdict.changes)));
  mkdirSync(path.dirname(released), { recursive: true });
  copyFileSync(contract, released);
  log(`info.version is ${version}; ${path.relative(ROOT, changelogFile)} has its entry; ${path.relative(ROOT, released)} is the new snapshot. Commit the three.`);
  return { version, needs: verdict.needs };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const value = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const date = value('--date');
  if (date !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(date)) {
    console.error('--date must be YYYY-MM-DD');
    process.exit(2);
  }
  release({ date, dryRun: args.includes('--dry-run'), contract: value('--contract'), released: value('--released'), changelog: value('--changelog') });
}
