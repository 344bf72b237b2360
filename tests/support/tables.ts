/**
 * The set-up the tables tests share: a test app for the file, projects whose storage (schemas,
 * roles) is dropped when the file ends, the operator's requests and DDL. Each file keeps only
 * what is its own.
 */
import { afterAll, beforeAll } from '@jest/globals';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startTestApp, type TestApp, type TestAppOptions } from './app.js';
import { dropProjectStorage } from '../../lib/tables/isolation.js';

export interface TablesHarness {
  /** The file's app (set in beforeAll). */
  readonly t: TestApp;
  /** A real listener's address (`listen: true`), for clients that need one (the ops CLI). */
  readonly url: string;
  /** Projects whose storage is dropped after the file; a test that makes one otherwise adds it. */
  readonly made: string[];
  /** A new project and a key with `scopes` (tables:read and tables:write by default). */
  project(scopes?: string[]): Promise<{ id: string; key: string }>;
  /** A request with the operator's token. */
  admin(method: 'get' | 'post' | 'put' | 'delete', path: string, body?: object): request.Test;
  /** Operator DDL in the project's `schema` (public by default). */
  ddl(projectId: string, sql: string, schema?: string): request.Test;
}

export function tablesHarness(
  options: TestAppOptions & { listen?: boolean; beforeClose?: () => Promise<unknown> } = {},
  onStart?: (started: { t: TestApp; url: string }) => void,
): TablesHarness {
  const { listen, beforeClose, ...appOptions } = options;
  let t: TestApp | undefined;
  let server: Server | undefined;
  let url = '';
  const made: string[] = [];
  const app = (): TestApp => {
    if (!t) throw new Error('tablesHarness: the app starts in beforeAll; use it inside a test or hook');
    return t;
  };
  const admin: TablesHarness['admin'] = (method, path, body) => {
    const req = request(app().app)[method](path).set('Authorization', `Bearer ${app().adminToken}`);
    return body ? req.send(body) : req;
  };

  beforeAll(async () => {
    t = await startTestApp(appOptions);
    if (listen) {
      server = await new Promise<Server>((resolve) => {
        const s = app().app.listen(0, '127.0.0.1', () => resolve(s));
      });
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    }
    onStart?.({ t: app(), url });
  });
  afterAll(async () => {
    if (!t) return;
    await beforeClose?.();
    for (const id of made) await dropProjectStorage(t.db, id).catch(() => undefined);
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
    }
    await t.close();
  });

  return {
    get t() { return app(); },
    get url() { return url; },
    made,
    async project(scopes = ['tables:read', 'tables:write']) {
      const p = await app().admin.project();
      made.push(p.id);
      return { id: p.id, key: (await app().admin.key(p.id, scopes)).secret };
    },
    admin,
    ddl: (projectId, sql, schema) => admin('post', `/admin/projects/${projectId}/tables/ddl`, schema ? { schema, sql } : { sql }),
  };
}

/** A test app for the file; each project in `projects` (filled by the tests) has its storage dropped before the app closes. */
export function useStorageTestApp(projects: string[], started: (t: TestApp) => void): void {
  let t: TestApp | undefined;
  beforeAll(async () => {
    t = await startTestApp();
    started(t);
  });
  afterAll(async () => {
    if (!t) return;
    for (const id of projects) await dropProjectStorage(t.db, id).catch(() => undefined);
    await t.close();
  });
}
