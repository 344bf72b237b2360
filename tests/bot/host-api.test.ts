/**
 * The bot's host API is one table (lib/bot/host-api.ts): the runtime contract's `x-bot-helpers`
 * section and the scaffold's types are what the table says (generated, checked here and by
 * `npm run generate:check`), the scaffold's helpers type-check against them, and the sandbox's
 * bridge applies each operation's own argument bound inside the isolate.
 */
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { HOST_API, hostOpBounds } from '../../lib/bot/host-api.js';
import { contractSection, typesSource, TYPES_FILE } from '../../scripts/generate-host-api.js';
import { scaffoldFiles } from '../../lib/code/scaffold.js';
import { buildTree } from '../../lib/deploy/build.js';
import { Sandbox } from '../../lib/sandbox/sandbox.js';

const EVENT = JSON.stringify({ type: 'message', message: { id: 'w1', from: '15550001', type: 'text', text: 'hi', raw: {}, conversation: { id: 7, state: 'unstructured' }, contact: { phone: '15550001', name: null }, received_at: '2026-03-01T12:00:00Z' } });

describe('the host API table', () => {
  it('When runtime-openapi.yaml is read, then its x-bot-helpers section states every operation of the table, and nothing else', () => {
    const document = YAML.parse(readFileSync('runtime-openapi.yaml', 'utf8'));
    expect(document['x-bot-helpers']).toEqual(JSON.parse(JSON.stringify(contractSection())));
    expect(Object.keys(document['x-bot-helpers'])).toEqual(Object.keys(HOST_API));
  });

  it("When the scaffold is read, then its generated types are the table's, for every operation", () => {
    const files = scaffoldFiles();
    expect(files.get(TYPES_FILE.replace(/^scaffold\//, ''))).toBe(typesSource());
    for (const name of Object.keys(HOST_API)) expect(typesSource()).toContain(`'${name}': {`);
  });

  it('When the scaffold is built as a deploy builds it, then it type-checks; a bot calling an operation with arguments its schema does not take fails the build at its line', async () => {
    const files = scaffoldFiles();
    expect((await buildTree(files)).ok).toBe(true);
    files.set('src/bot.ts', `import { hostCall } from './platform/runtime/host.js';
export async function onMessage(): Promise<void> {
  await hostCall('secrets.get', { nom: 'SHOP_API_TOKEN' });
}
`);
    const built = await buildTree(files);
    expect(built.ok).toBe(false);
    if (!built.ok) expect(built.diagnostics[0]).toMatchObject({ file: 'src/bot.ts', line: 3 });
  }, 60_000);

  it("When a bot calls the host over an operation's own argument bound, then the bridge refuses it inside the isolate; http.fetch takes larger arguments than log", async () => {
    const files = scaffoldFiles();
    files.set('src/bot.ts', `const host = (globalThis as unknown as { __host: { apply(r: undefined, a: unknown[], o: object): Promise<string> } }).__host;
const raw = (op: string, args: string) => host.apply(undefined, [op, args], { arguments: { copy: true }, result: { promise: true, copy: true } });
export async function onMessage(): Promise<void> {
  const big = JSON.stringify({ url: 'https://example.com/', method: 'POST', body: 'x'.repeat(600 * 1024) });
  const answers = [await raw('log', big), await raw('http.fetch', big), await raw('secrets.get', JSON.stringify({ name: 'X'.repeat(2000) }))];
  // Awaited (log.info is not): the line reaches the host before the event ends.
  await raw('log', JSON.stringify({ level: 'info', message: answers.map((a) => JSON.parse(a).error?.code ?? 'passed').join(',') }));
}
`);
    const built = await buildTree(files);
    if (!built.ok) throw new Error(JSON.stringify(built.diagnostics));
    const seen: string[] = [];
    const logged: string[] = [];
    const sandbox = await Sandbox.create(built.bundle, built.sourceMap, async (op, args) => {
      seen.push(op);
      if (op === 'log') logged.push(JSON.parse(args).message);
      return JSON.stringify({ ok: true, value: true });
    }, { memoryMb: 32, startupTimeoutMs: 1000, eventTimeoutMs: 3000 }, { ops: hostOpBounds() });
    const outcome = await sandbox.dispatch(EVENT);
    sandbox.dispose();
    expect(outcome.status).toBe('ok');
    expect(seen).toEqual(['http.fetch', 'log']);
    expect(logged).toEqual(['payload_too_large,passed,payload_too_large']);
  }, 60_000);
});
