/**
 * The scaffold a new project's development tree starts from: the real small TypeScript app in
 * the repository's `scaffold/` folder (entry point, manifests, channel endpoints, runtime helpers
 * and one example handler in src/bot.ts). Read once per process.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../platform/project-root.js';

export const SCAFFOLD_DIR = path.join(PROJECT_ROOT, 'scaffold');

let cached: Map<string, string> | undefined;

function walk(dir: string, prefix: string, out: Map<string, string>): void {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, rel, out);
    else if (entry.isFile()) out.set(rel, readFileSync(full, 'utf8'));
  }
}

/** Path → content of every scaffold file. */
export function scaffoldFiles(): Map<string, string> {
  if (!cached) {
    cached = new Map();
    walk(SCAFFOLD_DIR, '', cached);
  }
  return new Map(cached);
}
