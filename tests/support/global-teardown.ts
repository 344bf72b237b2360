/**
 * jest globalTeardown: drops this run's database, then stops the embedded PostgreSQL (last, after
 * every test file has closed its pools). A shim like global-setup.ts, for the same reason.
 * If jest.config.js does not name this file, the same cleanup runs on 'beforeExit'.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';

// A real import(): the CommonJS build would turn a plain import() into require(), and tsx's own
// CommonJS entry cannot register its loader (it looks for dist/esm/api/esm/index.mjs).
const nativeImport = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

export default async function globalTeardown(_globalConfig: unknown, projectConfig: { rootDir: string }): Promise<void> {
  const file = pathToFileURL(path.join(projectConfig.rootDir, 'tests', 'support', 'test-database.ts')).href;
  const { tsImport } = (await nativeImport('tsx/esm/api')) as typeof import('tsx/esm/api');
  const impl = (await tsImport(file, file)) as typeof import('./test-database.js');
  await impl.teardownTestDatabase();
}
