/**
 * Building a code tree: esbuild bundles `src/main.ts` and what it imports from the tree held in
 * memory (relative imports only: npm packages are not installed; esbuild works in its own
 * process), and the TypeScript compiler type-checks every `.ts` file (strict, ES2022 library, no
 * Node types: the bot has no Node) in a worker thread (lib/deploy/typecheck.ts).
 * Diagnostics always name a file of the tree with a 1-based line and column, never the bundle.
 */
import * as esbuild from 'esbuild';
import path from 'node:path';
import { typecheckInWorker } from './typecheck.js';
import type { Diagnostic } from './diagnostic.js';

export const ENTRY = 'src/main.ts';

export type { Diagnostic } from './diagnostic.js';

export type BuildResult =
  | { ok: true; bundle: string; sourceMap: string }
  | { ok: false; diagnostics: Diagnostic[] };

const NS = 'tree';

const LOADERS: Record<string, esbuild.Loader> = { '.ts': 'ts', '.js': 'js', '.mjs': 'js', '.json': 'json', '.txt': 'text', '.md': 'text' };

/** The tree file an import names, trying the usual TypeScript spellings (`./x.js` → `./x.ts`). */
function resolveInTree(files: Map<string, string>, fromDir: string, spec: string): string | undefined {
  const base = path.posix.normalize(path.posix.join(fromDir, spec));
  if (base.startsWith('..') || base.startsWith('/')) return undefined;
  const stem = base.replace(/\.(js|mjs)$/, '');
  const candidates = [base, `${stem}.ts`, `${base}.ts`, `${base}.js`, `${base}.json`, `${base}/index.ts`, `${base}/index.js`];
  return candidates.find((c) => files.has(c));
}

function treePlugin(files: Map<string, string>): esbuild.Plugin {
  return {
    name: 'code-tree',
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === 'entry-point') return { path: args.path, namespace: NS };
        const fromDir = path.posix.dirname(args.importer);
        if (!args.path.startsWith('./') && !args.path.startsWith('../')) {
          return { errors: [{ text: `Cannot import "${args.path}": npm packages are not available to the bot; import files of the tree with a relative path.` }] };
        }
        const found = resolveInTree(files, fromDir, args.path);
        if (!found) return { errors: [{ text: `Cannot find "${args.path}" in the tree (from ${args.importer}).` }] };
        return { path: found, namespace: NS };
      });
      build.onLoad({ filter: /.*/, namespace: NS }, (args) => {
        const loader = LOADERS[path.posix.extname(args.path)];
        if (!loader) return { errors: [{ text: `${args.path}: files of this kind cannot be imported.` }] };
        return { contents: files.get(args.path) ?? '', loader };
      });
    },
  };
}

function fromEsbuild(messages: esbuild.Message[]): Diagnostic[] {
  return messages.map((m) => ({
    file: (m.location?.file ?? ENTRY).replace(/^tree:/, ''),
    line: Math.max(1, m.location?.line ?? 1),
    column: (m.location?.column ?? 0) + 1,
    message: m.text,
    source: 'bundle' as const,
  }));
}

async function bundle(files: Map<string, string>): Promise<BuildResult> {
  try {
    const result = await esbuild.build({
      entryPoints: [ENTRY],
      bundle: true,
      write: false,
      format: 'iife',
      platform: 'neutral',
      target: 'es2022',
      mainFields: [],
      outfile: 'bundle.js',
      sourcemap: 'external',
      sourcesContent: false,
      logLevel: 'silent',
      plugins: [treePlugin(files)],
    });
    if (result.errors.length) return { ok: false, diagnostics: fromEsbuild(result.errors) };
    const js = result.outputFiles.find((f) => f.path.endsWith('.js'))!;
    const map = result.outputFiles.find((f) => f.path.endsWith('.map'));
    return { ok: true, bundle: js.text, sourceMap: map?.text ?? '{"version":3,"sources":[],"mappings":""}' };
  } catch (e) {
    const errors = (e as { errors?: esbuild.Message[] }).errors;
    if (Array.isArray(errors) && errors.length) return { ok: false, diagnostics: fromEsbuild(errors) };
    throw e;
  }
}

/** Bundles and type-checks; the bundle is answered only when both pass. */
export async function buildTree(files: Map<string, string>): Promise<BuildResult> {
  if (!files.has(ENTRY)) {
    return { ok: false, diagnostics: [{ file: ENTRY, line: 1, column: 1, message: `The entry point ${ENTRY} is missing.`, source: 'bundle' }] };
  }
  const bundled = await bundle(files);
  if (!bundled.ok) return bundled;
  const diagnostics = await typecheckInWorker(files);
  if (diagnostics.length) return { ok: false, diagnostics };
  return bundled;
}
