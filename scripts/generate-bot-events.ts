/**
 * `npm run generate` (and `generate:check`, with `--check`): the scaffold's event types
 * (scaffold/src/platform/generated/events.ts) copied from their one source, lib/bot/event-types.ts,
 * under a header saying so. With `--check` nothing is written: exit 1 when the copy is stale.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { putGenerated } from './generated-file.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SOURCE_FILE = 'lib/bot/event-types.ts';
export const EVENTS_FILE = 'scaffold/src/platform/generated/events.ts';

/** The scaffold's copy of the source's text. */
export function eventsSource(source: string = readFileSync(path.join(root, SOURCE_FILE), 'utf8')): string {
  return `// Generated from ${SOURCE_FILE} by scripts/generate-bot-events.ts (\`npm run generate\`): do not edit (the platform replaces it).\n${source}`;
}

function main(): number {
  return putGenerated(root, EVENTS_FILE, eventsSource(), SOURCE_FILE, process.argv.includes('--check')) ? 0 : 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exit(main());
