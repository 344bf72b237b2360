/**
 * How the service forks a child module of its own (the bot sandbox, the build process).
 *
 * From dist/ (npm start) the child is the compiled JavaScript beside its caller. From the sources
 * (tests, npm run dev) it was run under tsx, whose loader cost every child 0.4 s of CPU at start,
 * and the build process 1.4 s (each CommonJS package it loads goes through tsx's hooks). Here it is
 * one ESM bundle of the child's own modules, made with esbuild (packages stay imports from
 * node_modules), written once per content under node_modules/.cache and run by plain node: about
 * 0.1 s. A child that reads `import.meta` (which a bundle would move), or whose bundle cannot be
 * made, runs under tsx as before.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { PROJECT_ROOT } from './project-root.js';

export interface ChildEntry {
  file: string;
  execArgv: string[];
}

const CACHE_DIR = path.join(PROJECT_ROOT, 'node_modules', '.cache', 'messaging-service', 'children');
const made = new Map<string, ChildEntry>();

/** `source` is the child's module as the caller names it: `child.ts` beside a source caller, `child.js` in dist/. */
export function childEntry(source: string): ChildEntry {
  if (!source.endsWith('.ts')) return { file: source, execArgv: ['--enable-source-maps'] };
  let entry = made.get(source);
  if (!entry) made.set(source, (entry = bundled(source) ?? { file: source, execArgv: ['--import', 'tsx'] }));
  return entry;
}

function bundled(source: string): ChildEntry | undefined {
  try {
    // Loaded only here: production never runs from the sources. Without worker threads its sync
    // call runs esbuild once and lets it end; with them it kept a service process for later calls.
    const threads = process.env.ESBUILD_WORKER_THREADS;
    process.env.ESBUILD_WORKER_THREADS = '0';
    let esbuild: typeof import('esbuild');
    try {
      esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
    } finally {
      if (threads === undefined) delete process.env.ESBUILD_WORKER_THREADS;
      else process.env.ESBUILD_WORKER_THREADS = threads;
    }
    const out = esbuild.buildSync({
      entryPoints: [source], bundle: true, platform: 'node', format: 'esm', target: 'node20',
      packages: 'external', sourcemap: 'inline', write: false, logLevel: 'silent',
    });
    const text = out.outputFiles[0]?.text;
    if (!text || /\bimport\.meta\b/.test(text.replace(/\n\/\/# sourceMappingURL=.*$/s, ''))) return undefined;
    // Under the source's own path (…/lib/sandbox/child.<hash>.mjs): what reads a command line still finds `sandbox/child`.
    const named = path.relative(PROJECT_ROOT, source).replace(/\.ts$/, '');
    const file = path.join(CACHE_DIR, `${named}.${createHash('sha256').update(text).digest('hex').slice(0, 16)}.mjs`);
    if (!existsSync(file)) {
      mkdirSync(path.dirname(file), { recursive: true });
      // Written whole, then renamed: a child started by another process never reads half a file.
      const part = `${file}.${process.pid}.part`;
      writeFileSync(part, text);
      renameSync(part, file);
    }
    return { file, execArgv: ['--enable-source-maps'] };
  } catch {
    return undefined;
  }
}
