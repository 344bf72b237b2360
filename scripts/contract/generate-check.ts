/**
 * `npm run generate:check`: says whether generated/ is stale, without changing anything. Each
 * stale file is named with the contract it comes from and the command that fixes it. CI runs it.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(root, 'node_modules', '.bin', 'openapi-typescript');
const PAIRS: Array<[string, string]> = [
  ['openapi.yaml', 'generated/api.ts'],
  ['admin-openapi.yaml', 'generated/admin-api.ts'],
  ['runtime-openapi.yaml', 'generated/runtime-api.ts'],
];

async function main(): Promise<number> {
  let stale = 0;
  for (const [source, output] of PAIRS) {
    const ok = await promisify(execFile)(bin, [source, '-o', output, '--check'], { cwd: root }).then(() => true, () => false);
    if (ok) {
      console.log(`${output} is up to date with ${source}.`);
    } else {
      console.error(`${output} is stale against ${source}: run \`npm run generate\` and commit generated/.`);
      stale++;
    }
  }
  return stale === 0 ? 0 : 1;
}

process.exit(await main());
