/**
 * `npm run contract:diff [-- --check] [--released <file>] [--contract <file>] [--changelog <file>]`
 * Prints the breaking, additive and documentation changes of openapi.yaml against the last
 * released contract (contract/released/openapi.yaml). With --check (CI) it exits 1 when the
 * versioning policy is not met: a breaking change without the major bump and its CHANGELOG.md
 * entry, or a version that moved illegally. Additive changes pass and are listed.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHANGELOG, CONTRACT, RELEASED, formatChanges, judge, readChangelog, readYaml } from './policy.js';

function option(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1] : fallback;
}

export function main(args: string[]): number {
  const released = option(args, '--released', RELEASED);
  const contract = option(args, '--contract', CONTRACT);
  const changelog = option(args, '--changelog', CHANGELOG);
  const verdict = judge(readYaml(released), readYaml(contract), readChangelog(changelog));
  console.log(`Contract changes: ${released} (${verdict.releasedVersion}) → ${contract} (${verdict.currentVersion}); they need ${verdict.needs === 'none' ? 'no new version' : `a ${verdict.needs} version step`}.`);
  for (const line of formatChanges(verdict.changes)) console.log(line);
  if (!args.includes('--check')) return 0;
  if (verdict.problems.length === 0) {
    console.log('Versioning policy: OK.');
    return 0;
  }
  for (const p of verdict.problems) console.error(`Versioning policy: ${p}`);
  return 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exit(main(process.argv.slice(2)));
}
