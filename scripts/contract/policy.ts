/**
 * The versioning policy of the public contract (README "Versioning"): `info.version` is semver.
 * A breaking change needs the next major, an additive change at least the next minor, a
 * documentation change at least the next patch, each with a CHANGELOG.md entry for that version;
 * the `/v1` path prefix stays. The last released contract is kept in contract/released/.
 */
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { diffContracts, groupChanges, requiredBump, type Change } from './differ.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CONTRACT = 'openapi.yaml';
export const RELEASED = 'contract/released/openapi.yaml';
export const CHANGELOG = 'CHANGELOG.md';

export type Bump = 'major' | 'minor' | 'patch';

export function parseVersion(version: unknown): [number, number, number] | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(String(version ?? ''));
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

export function bump(version: string, level: Bump): string {
  const v = parseVersion(version);
  if (!v) throw new Error(`info.version "${version}" is not MAJOR.MINOR.PATCH`);
  if (level === 'major') return `${v[0] + 1}.0.0`;
  if (level === 'minor') return `${v[0]}.${v[1] + 1}.0`;
  return `${v[0]}.${v[1]}.${v[2] + 1}`;
}

/** Whether CHANGELOG.md has a heading for this version (`## 1.2.0` or `## [1.2.0]`). */
export function changelogHas(changelog: string, version: string): boolean {
  const escaped = version.replace(/\./g, '\\.');
  return new RegExp(`^##\\s+\\[?v?${escaped}\\]?(\\s|$)`, 'm').test(changelog);
}

export interface PolicyVerdict {
  releasedVersion: string;
  currentVersion: string;
  changes: Change[];
  /** The least step the changes need. */
  needs: Bump | 'none';
  /** Empty when the contract may ship as it is. */
  problems: string[];
}

/**
 * The gate. The current version either equals the released one (additive or documentation changes
 * may wait for the next release; a breaking change may not) or is a legal step from it that the
 * changes justify, with a changelog entry.
 */
export function judge(released: Record<string, any>, current: Record<string, any>, changelog: string): PolicyVerdict {
  const releasedVersion = String(released.info?.version ?? '');
  const currentVersion = String(current.info?.version ?? '');
  const changes = diffContracts(released, current);
  const needs = requiredBump(changes);
  const problems: string[] = [];
  const breaking = changes.filter((c) => c.kind === 'breaking').length;
  if (!parseVersion(currentVersion)) problems.push(`info.version "${currentVersion}" is not MAJOR.MINOR.PATCH.`);
  else if (!parseVersion(releasedVersion)) problems.push(`The released snapshot's info.version "${releasedVersion}" is not MAJOR.MINOR.PATCH.`);
  else if (currentVersion !== releasedVersion) {
    const allowed = needs === 'none' ? [] : (['major', 'minor', 'patch'] as Bump[]).slice(0, ['major', 'minor', 'patch'].indexOf(needs) + 1).map((l) => bump(releasedVersion, l));
    if (!allowed.includes(currentVersion)) {
      problems.push(
        needs === 'none'
          ? `info.version moved from ${releasedVersion} to ${currentVersion} but the contract did not change.`
          : `info.version ${currentVersion} is not a legal step from ${releasedVersion} for ${needs === 'major' ? 'breaking' : needs === 'minor' ? 'additive' : 'documentation'} changes (allowed: ${allowed.join(', ')}).`,
      );
    } else if (!changelogHas(changelog, currentVersion)) {
      problems.push(`CHANGELOG.md has no entry for ${currentVersion} (a heading "## ${currentVersion}").`);
    }
  } else if (breaking > 0) {
    problems.push(`${breaking} breaking change(s) against the released ${releasedVersion}: they need info.version ${bump(releasedVersion, 'major')} and a CHANGELOG.md entry for it (npm run contract:release does both), or undo them.`);
  }
  return { releasedVersion, currentVersion, changes, needs, problems };
}

export function readYaml(file: string): Record<string, any> {
  return parse(readFileSync(path.resolve(ROOT, file), 'utf8')) as Record<string, any>;
}

export function readChangelog(file = CHANGELOG): string {
  const full = path.resolve(ROOT, file);
  return existsSync(full) ? readFileSync(full, 'utf8') : '';
}

/** Lines a person reads: breaking, additive, documentation. */
export function formatChanges(changes: Change[]): string[] {
  const lines: string[] = [];
  const groups: Array<[Change['kind'], string, string]> = [['breaking', 'Breaking', '!'], ['additive', 'Additive', '+'], ['docs', 'Documentation', '~']];
  for (const [kind, title, mark] of groups) {
    const group = changes.filter((c) => c.kind === kind);
    if (group.length === 0) continue;
    lines.push(`${title} (${group.length}):`);
    for (const c of groupChanges(group)) {
      lines.push(c.places.length > 1 ? `  ${mark} ${c.message} [${c.rule}] at ${c.places.length} places: ${c.places.join('; ')}` : `  ${mark} ${c.at}: ${c.message} [${c.rule}]`);
    }
  }
  if (lines.length === 0) lines.push('No changes.');
  return lines;
}
