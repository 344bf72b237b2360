/**
 * A loopback gateway that adds a bearer, as a connector configured with one does: for clients (the MCP
 * conformance suites) that connect without credentials.
 */
import http from 'node:http';
import { startTestApp } from './app.js';
import { freePort } from './local.js';

/** Listens on `port` and forwards every request as it came (method, path, Host, Origin, body) to `appPort`, with `token` as its bearer. */
export async function bearerGateway(port: number, appPort: number, token: string): Promise<http.Server> {
  const gateway = http.createServer((req, res) => {
    const upstream = http.request({ host: '127.0.0.1', port: appPort, method: req.method, path: req.url, headers: { ...req.headers, authorization: `Bearer ${token}` } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => gateway.listen(port, '127.0.0.1', resolve));
  return gateway;
}

/**
 * A test app whose public URL is a bearer gateway, and a connection of a project of its own (reads
 * of contacts and conversations) as that bearer: `url` is its MCP endpoint as an outside client,
 * configured with the token, reaches it.
 */
export async function mcpBehindGateway(projectName: string): Promise<{ url: string; close(): Promise<void> }> {
  const gatewayPort = await freePort();
  const t = await startTestApp({ config: { publicBaseUrl: `http://localhost:${gatewayPort}` } });
  const app = http.createServer(t.app);
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  const appPort = (app.address() as { port: number }).port;
  const p = await t.admin.project(projectName);
  const token = (await t.admin.connection([{ projectId: p.id, scopes: ['contacts:read', 'conversations:read'] }])).secret;
  const gateway = await bearerGateway(gatewayPort, appPort, token);
  return {
    url: `http://127.0.0.1:${gatewayPort}/mcp`,
    async close() {
      await new Promise((r) => gateway.close(r));
      await new Promise((r) => app.close(r));
      await t.close();
    },
  };
}
