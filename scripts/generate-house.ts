/**
 * `npm run generate` (and `--check` from generate:check): the README's domain floor redrawn from
 * ROOM_SUMMARIES and CAPABILITY_EDGES (scripts/house.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { houseProblems, redrawn } from './house.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const file = path.join(root, 'README.md');
const problems = houseProblems(root);
if (problems.length) {
  for (const p of problems) console.error(p);
  process.exit(1);
}
const before = fs.readFileSync(file, 'utf8');
const after = redrawn(before);
if (process.argv.includes('--check')) {
  if (before !== after) {
    console.error("README.md's house is stale against CAPABILITY_EDGES and ROOM_SUMMARIES: run `npm run generate` and commit README.md.");
    process.exit(1);
  }
  console.log("README.md's house is up to date with CAPABILITY_EDGES and the rooms of lib/.");
} else if (before !== after) {
  fs.writeFileSync(file, after);
  console.log('wrote README.md (the house)');
}
