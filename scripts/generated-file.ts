/**
 * How a generator (`npm run generate`) puts down a file it derives, or with `--check` only says
 * whether the committed one is stale: one way for every generator, so CI's messages read alike.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Writes `file` (under `root`) when its text is not `wanted`; with `check`, writes nothing and
 * answers false when it is stale. `source` names what it is generated from.
 */
export function putGenerated(root: string, file: string, wanted: string, source: string, check: boolean): boolean {
  const full = path.join(root, file);
  let current: string | undefined;
  try {
    current = readFileSync(full, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === wanted) {
    if (check) console.log(`${file} is up to date with ${source}.`);
    return true;
  }
  if (check) {
    console.error(`${file} is stale against ${source}: run \`npm run generate\` and commit it.`);
    return false;
  }
  writeFileSync(full, wanted);
  console.log(`wrote ${file}`);
  return true;
}
