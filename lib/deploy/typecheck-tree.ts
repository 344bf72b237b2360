/**
 * The TypeScript type check of a code tree (strict, ES2022 library, no Node types: the bot has no
 * Node). It runs in the build process (lib/deploy/build-child.ts), never in the service's: the
 * compiler is synchronous and takes from a few hundred milliseconds to seconds. The standard
 * library's declarations are parsed once per process and reused.
 */
import path from 'node:path';
import ts from 'typescript';
import type { Diagnostic } from './diagnostic.js';
import { ENTRY } from './build-protocol.js';

const ROOT = '/project/';
const MAX_DIAGNOSTICS = 50;
const LIB_DIR = path.dirname(ts.getDefaultLibFilePath({}));
const libCache = new Map<string, ts.SourceFile>();

const COMPILER_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  lib: ['lib.es2022.d.ts'],
  types: [],
  strict: true,
  noEmit: true,
  isolatedModules: true,
  skipLibCheck: true,
  resolveJsonModule: true,
  allowJs: false,
};

export function typecheckTree(files: Map<string, string>): Diagnostic[] {
  const rootNames = [...files.keys()].filter((p) => p.endsWith('.ts')).map((p) => ROOT + p);
  const treeFile = (name: string) => (name.startsWith(ROOT) ? name.slice(ROOT.length) : undefined);
  const host: ts.CompilerHost = {
    getSourceFile(fileName, languageVersion) {
      const rel = treeFile(fileName);
      if (rel !== undefined) {
        const text = files.get(rel);
        return text === undefined ? undefined : ts.createSourceFile(fileName, text, languageVersion, true);
      }
      const key = `${fileName}|${typeof languageVersion === 'object' ? languageVersion.languageVersion : languageVersion}`;
      let sf = libCache.get(key);
      if (!sf) {
        const text = ts.sys.readFile(fileName);
        if (text === undefined) return undefined;
        sf = ts.createSourceFile(fileName, text, languageVersion, false);
        libCache.set(key, sf);
      }
      return sf;
    },
    getDefaultLibFileName: (o) => path.join(LIB_DIR, ts.getDefaultLibFileName(o)),
    getDefaultLibLocation: () => LIB_DIR,
    writeFile: () => undefined,
    getCurrentDirectory: () => ROOT,
    getDirectories: () => [],
    getCanonicalFileName: (f) => f,
    useCaseSensitiveFileNames: () => true,
    getNewLine: () => '\n',
    fileExists: (f) => {
      const rel = treeFile(f);
      return rel !== undefined ? files.has(rel) : f.startsWith(LIB_DIR) && ts.sys.fileExists(f);
    },
    readFile: (f) => {
      const rel = treeFile(f);
      return rel !== undefined ? files.get(rel) : f.startsWith(LIB_DIR) ? ts.sys.readFile(f) : undefined;
    },
    directoryExists: (d) => d.startsWith(ROOT) || d.startsWith(LIB_DIR),
  };
  const program = ts.createProgram({ rootNames, options: COMPILER_OPTIONS, host });
  const out: Diagnostic[] = [];
  for (const d of ts.getPreEmitDiagnostics(program)) {
    if (d.category !== ts.DiagnosticCategory.Error) continue;
    const message = `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    const rel = d.file ? treeFile(d.file.fileName) : undefined;
    if (d.file && rel !== undefined && d.start !== undefined) {
      const pos = d.file.getLineAndCharacterOfPosition(d.start);
      out.push({ file: rel, line: pos.line + 1, column: pos.character + 1, message, source: 'typecheck' });
    } else {
      out.push({ file: rel ?? ENTRY, line: 1, column: 1, message, source: 'typecheck' });
    }
    if (out.length >= MAX_DIAGNOSTICS) break;
  }
  return out;
}
