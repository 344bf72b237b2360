/**
 * `npm run generate` (and `generate:check`, with `--check`): the scaffold's event types
 * (scaffold/src/platform/generated/events.ts) copied from their one source, lib/bot/event-types.ts,
 * under a header saying so. With `--check` nothing is written: exit 1 when the copy is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SOURCE_FILE = 'lib/bot/event-types.ts';
export const EVENTS_FILE = 'scaffold/src/platform/generated/events.ts';

/** The scaffold's copy of the source's text. */
export function eventsSource(source: string = readFileSync(path.join(root, SOURCE_FILE), 'utf8')): string {
  return `// Generated from ${SOURCE_FILE} by scripts/generate-bot-events.ts (\`npm run generate\`): do not edit (the platform replaces it).\n${source}`;
}

function main(): number {
  const check = process.argv.includes('--check');
  const full = path.join(root, EVENTS_FILE);
  const wanted = eventsSource();
  let current: string | undefined;
  try {
    current = readFileSync(full, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === wanted) {
    if (check) console.log(`${EVENTS_FILE} is up to date with ${SOURCE_FILE}.`);
    return 0;
  }
  if (check) {
    console.error(`${EVENTS_FILE} is stale against ${SOURCE_FILE}: run \`npm run generate\` and commit it.`);
    return 1;
  }
  writeFileSync(full, wanted);
  console.log(`wrote ${EVENTS_FILE}`);
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exit(main());
