#!/usr/bin/env node
/**
 * The compiled build: `tsc -p tsconfig.build.json` into dist/ (ES modules, source maps), skipped
 * when dist/ was built from exactly these sources (a hash of every compiled source file and the
 * compiler settings, kept in dist/.build-hash). `npm start` runs it first, so the README's two
 * commands need nothing else; `npm run build -- --force` rebuilds.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const config = JSON.parse(readFileSync(path.join(root, 'tsconfig.build.json'), 'utf8'));
const stampFile = path.join(root, 'dist', '.build-hash');

function sources() {
  const out = [];
  const walk = (rel) => {
    const abs = path.join(root, rel);
    if (!existsSync(abs)) return;
    if (statSync(abs).isFile()) return void (rel.endsWith('.ts') && out.push(rel));
    for (const name of readdirSync(abs).sort()) walk(path.join(rel, name));
  };
  for (const pattern of config.include) walk(pattern.replace(/\/\*\*\/\*\.ts$/, ''));
  return out;
}

function hashOf(files) {
  const h = createHash('sha256');
  for (const f of ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json', ...files]) {
    h.update(f).update('\0');
    if (existsSync(path.join(root, f))) h.update(readFileSync(path.join(root, f)));
  }
  return h.digest('hex');
}

const force = process.argv.includes('--force');
const hash = hashOf(sources());
const current = existsSync(stampFile) ? readFileSync(stampFile, 'utf8').trim() : '';
if (!force && current === hash) process.exit(0);
const started = Date.now();
console.log('Compiling the service into dist/ (once per change of the sources)…');
rmSync(path.join(root, 'dist'), { recursive: true, force: true });
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
} catch {
  console.error('The build failed (see above); `npm run typecheck` shows the same errors.');
  process.exit(1);
}
writeFileSync(stampFile, hash + '\n');
console.log(`Built dist/ in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
