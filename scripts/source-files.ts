/** The service's TypeScript files below `roots` (files or folders), as paths relative to `root` with `/`, sorted: what the CI checks read. */
import fs from 'node:fs';
import path from 'node:path';

function walk(entry: string, out: string[]): string[] {
  if (!fs.existsSync(entry)) return out;
  if (fs.statSync(entry).isFile()) {
    if (entry.endsWith('.ts')) out.push(entry);
    return out;
  }
  for (const name of fs.readdirSync(entry).sort()) walk(path.join(entry, name), out);
  return out;
}

export function sourceFiles(root: string, roots: string[]): string[] {
  return roots.flatMap((r) => walk(path.join(root, r), [])).map((f) => path.relative(root, f).split(path.sep).join('/'));
}
