/**
 * A loopback gateway that adds a bearer, as a connector configured with one does: for clients (the MCP
 * conformance suites) that connect without credentials.
 */
import http from 'node:http';

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
