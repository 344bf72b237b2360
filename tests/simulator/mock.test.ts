/**
 * `npm run mock` serves the contract with Prism: it starts on the port asked for and answers an
 * operation from the contract's examples with a body the contract accepts.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/local.js';
import { shippedContract } from '../support/contracts.js';
import { ResponseChecker } from '../../http/contract-checks/response-check.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let child: ChildProcess | undefined;
afterAll(() => {
  if (child?.pid && child.exitCode === null) child.kill('SIGTERM');
});

function startMock(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    child = spawn(process.execPath, ['--import', 'tsx', 'scripts/contract/mock.ts'], { cwd: root, env: { ...process.env, MOCK_PORT: String(port) } });
    let out = '';
    const seen = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Prism is listening')) resolve(out);
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.on('exit', (code) => reject(new Error(`mock exited with ${code}:\n${out}`)));
  });
}

describe('npm run mock', () => {
  it('When started, then it listens on MOCK_PORT and answers GET /v1/ping as the contract describes', async () => {
    const port = await freePort();
    const banner = await startMock(port);
    expect(banner).toContain(`Prism is listening on http://127.0.0.1:${port}`);
    const res = await fetch(`http://127.0.0.1:${port}/v1/ping`, { headers: { Authorization: 'Bearer pk_test_mock' } });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(new ResponseChecker(shippedContract('public')).check('ping', 200, body)).toEqual([]);
    const anonymous = await fetch(`http://127.0.0.1:${port}/v1/ping`);
    expect(anonymous.status).toBe(401);
  }, 60_000);
});
