/**
 * jest globalSetup: creates and migrates this run's database (see test-database.ts).
 *
 * Why a shim: jest loads globalSetup outside its ESM runtime, compiled to CommonJS, without
 * moduleNameMapper, so `./x.js` imports of .ts files and `import.meta` do not work here. The real
 * code is therefore loaded through tsx, as real ESM, exactly like the service runs. Nothing but
 * node: built-ins may be imported statically in this file.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';

// A real import(): the CommonJS build would turn a plain import() into require(), and tsx's own
// CommonJS entry cannot register its loader (it looks for dist/esm/api/esm/index.mjs).
const nativeImport = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

export default async function globalSetup(_globalConfig: unknown, projectConfig: { rootDir: string }): Promise<void> {
  const file = pathToFileURL(path.join(projectConfig.rootDir, 'tests', 'support', 'test-database.ts')).href;
  const { tsImport } = (await nativeImport('tsx/esm/api')) as typeof import('tsx/esm/api');
  const impl = (await tsImport(file, file)) as typeof import('./test-database.js');
  await impl.setupTestDatabase(projectConfig.rootDir);
}
