/**
 * `npm run mock`: a mock of the public API served from openapi.yaml by Prism, for integrators who
 * want to build before they have a key. It answers every operation from the contract's examples
 * (or, with `-- --dynamic`, values generated from the schemas), checks requests against the
 * contract (a missing bearer is 401, a bad body 422 in Prism's words) and keeps no state.
 * MOCK_PORT (default 4020) and MOCK_HOST (default 127.0.0.1) choose where it listens; any other
 * argument goes to `prism mock`.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const prism = path.join(root, 'node_modules', '.bin', 'prism');
const port = process.env.MOCK_PORT || '4020';
const host = process.env.MOCK_HOST || '127.0.0.1';
if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) {
  console.error(`MOCK_PORT must be a port number, got "${port}"`);
  process.exit(2);
}
const args = process.argv.slice(2);
const contract = args.find((a) => a.endsWith('.yaml') || a.endsWith('.json')) ? [] : [path.join(root, 'openapi.yaml')];
console.log(`Mock of the API (openapi.yaml, by Prism) on http://${host}:${port}; try: curl -H 'Authorization: Bearer pk_test_mock' http://${host}:${port}/v1/ping`);
const child = spawn(prism, ['mock', '-p', port, '-h', host, ...args, ...contract], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
