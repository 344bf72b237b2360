/**
 * Bundling a code tree with esbuild: `src/main.ts` and what it imports from the tree held in memory
 * (relative imports only: npm packages are not installed). Runs in the build process
 * (lib/deploy/build-child.ts), whose esbuild service process is its child. Diagnostics always name
 * a file of the tree with a 1-based line and column, never the bundle.
 */
import * as esbuild from 'esbuild';
import path from 'node:path';
import { ENTRY, type BuildResult } from './build-protocol.js';
import type { Diagnostic } from './diagnostic.js';

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

export async function bundleTree(files: Map<string, string>): Promise<BuildResult> {
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
