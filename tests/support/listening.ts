/**
 * A test app served on a free local port, its public URL that address: for the agents (the MCP SDK's
 * client, OAuth clients) that reach the service over HTTP and are told its URL by its metadata.
 */
import http from 'node:http';
import { afterAll, beforeAll } from '@jest/globals';
import type { Config } from '../../lib/platform/config.js';
import { startTestApp, type TestApp } from './app.js';
import { freePort } from './local.js';

export interface ListeningApp {
  t: TestApp;
  /** The public URL, `http://<host>:<port>`. */
  base: string;
  port: number;
  server: http.Server;
  /** Stops the server, then the app. */
  close(): Promise<void>;
}

/** `host` names the public URL (the server listens on 127.0.0.1 either way); `config` is added to it. */
export async function startListeningApp(config: Partial<Config> = {}, host = '127.0.0.1'): Promise<ListeningApp> {
  const port = await freePort();
  const base = `http://${host}:${port}`;
  const t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, config: { publicBaseUrl: base, ...config } });
  const server = http.createServer(t.app);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    t, base, port, server,
    async close() {
      await new Promise((r) => server.close(r));
      await t.close();
    },
  };
}

/** startListeningApp before the file's tests and closed after them, as useTestApp does for a test app. */
export function useListeningApp(started: (app: ListeningApp) => void, config: Partial<Config> = {}, host = '127.0.0.1'): void {
  let app: ListeningApp | undefined;
  beforeAll(async () => {
    app = await startListeningApp(config, host);
    started(app);
  });
  afterAll(async () => {
    await app?.close();
  });
}
