/**
 * `npm run generate:check`: says whether generated/ is stale, without changing anything. Each
 * stale file is named with the contract it comes from and the command that fixes it. CI runs it.
 * The bot's host API table (lib/bot/host-api.ts) is checked too: the scaffold's types and the
 * runtime contract's `x-bot-helpers` section (scripts/generate-host-api.ts --check); so are the
 * scaffold's copy of the bot's event types (scripts/generate-bot-events.ts --check) and the README's house.
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
  // The bot's host API table (lib/bot/host-api.ts), the bot's event types (lib/bot/event-types.ts,
  // copied into the scaffold) and the README's house (CAPABILITY_EDGES and the rooms of lib/): each
  // generator says with --check whether what it writes is stale.
  for (const script of ['generate-host-api.ts', 'generate-bot-events.ts', 'generate-house.ts']) {
    const run = await promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(root, 'scripts', script), '--check'], { cwd: root }).then(
      (r) => ({ ok: true, out: r.stdout }),
      (e: { stdout?: string; stderr?: string }) => ({ ok: false, out: `${e.stdout ?? ''}${e.stderr ?? ''}` }),
    );
    if (run.ok) process.stdout.write(run.out);
    else {
      process.stderr.write(run.out);
      stale++;
    }
  }
  return stale === 0 ? 0 : 1;
}

process.exit(await main());
