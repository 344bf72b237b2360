/**
 * The official MCP conformance suite's 2026-07-28 server scenarios against /mcp. The suite's 0.2
 * line needs Node 22 (`fs.globSync`) and is not a dependency: scripts/ci/mcp-conformance.sh
 * installs it and Node 22 (the npm `node` package) outside the repository and runs this file with
 * CONFORMANCE_2026_BIN and CONFORMANCE_NODE set; without them it is skipped. As in
 * tests/mcp/mcp-conformance.test.ts, the suite reaches the service through a loopback gateway that adds
 * an operator-issued token (the suite sends no credential).
 *
 * Every 2026-07-28 scenario of `conformance list --server` is either run (APPLICABLE_2026, every
 * check passing, each check that cannot apply named in NOT_TESTABLE_CHECKS) or named with why not.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { readdirSync, readFileSync } from 'node:fs';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';
import { mcpBehindGateway } from '../support/gateway.js';
import { runProcess, tempFolder } from '../support/local.js';

const BIN = process.env.CONFORMANCE_2026_BIN;
const NODE = process.env.CONFORMANCE_NODE ?? process.execPath;
const VERSION = '2026-07-28';

export const APPLICABLE_2026 = [
  'server-stateless',
  'tools-list',
  'dns-rebinding-protection',
  'caching',
  'http-header-validation',
  'server-sse-multiple-streams',
  'input-required-result-unsupported-methods',
  'input-required-result-validate-input',
];
const FIXTURE = 'calls a test tool of the reference server (test_…), which this server does not have';
/** Checks of an applicable scenario that need the reference server's fixtures or features this server does not have. */
export const NOT_TESTABLE_CHECKS: Record<string, string> = {
  'sep-2575-server-rejects-undeclared-capability': `${FIXTURE} (test_missing_capability); no tool here needs a client capability`,
  'sep-2575-missing-capability-http-400': `${FIXTURE} (test_missing_capability)`,
  'sep-2575-http-server-no-independent-requests-on-stream': `${FIXTURE} (test_streaming_elicitation); answers are JSON, never a stream`,
  'sep-2575-server-no-log-without-loglevel': `${FIXTURE} (test_logging_tool); the server never sends log notifications`,
  'sep-2549-prompts-list-caching-hints': 'no prompts capability: prompts/list is -32601',
  'sep-2549-resources-list-caching-hints': 'no resources capability: resources/list is -32601',
  'sep-2549-resources-templates-list-caching-hints': 'no resources capability',
};
const NO_RESOURCES = 'no resources capability (resources/* is -32601)';
const NO_PROMPTS = 'no prompts capability (prompts/* is -32601)';
const MRTR = `${FIXTURE}; the server never asks the client for input (no InputRequiredResult)`;
export const NOT_APPLICABLE_2026: Record<string, string> = {
  'completion-complete': 'no completions capability (nothing to complete)',
  'tools-call-simple-text': FIXTURE,
  'tools-call-image': FIXTURE,
  'tools-call-audio': FIXTURE,
  'tools-call-embedded-resource': FIXTURE,
  'tools-call-mixed-content': FIXTURE,
  'tools-call-error': `${FIXTURE} (our tool errors: tests/mcp/mcp-server.test.ts)`,
  'tools-call-with-progress': `${FIXTURE}; no progress notifications (each call answers at once)`,
  'json-schema-2020-12': FIXTURE,
  'resources-list': NO_RESOURCES,
  'resources-read-text': NO_RESOURCES,
  'resources-read-binary': NO_RESOURCES,
  'resources-templates-read': NO_RESOURCES,
  'sep-2164-resource-not-found': NO_RESOURCES,
  'prompts-list': NO_PROMPTS,
  'prompts-get-simple': NO_PROMPTS,
  'prompts-get-with-args': NO_PROMPTS,
  'prompts-get-embedded-resource': NO_PROMPTS,
  'prompts-get-with-image': NO_PROMPTS,
  'http-custom-header-server-validation': 'no tool parameter is mirrored into a header (no x-mcp-header), so every check is untestable',
  'input-required-result-basic-elicitation': MRTR,
  'input-required-result-basic-sampling': MRTR,
  'input-required-result-basic-list-roots': MRTR,
  'input-required-result-request-state': MRTR,
  'input-required-result-multiple-input-requests': MRTR,
  'input-required-result-multi-round': MRTR,
  'input-required-result-missing-input-response': MRTR,
  'input-required-result-non-tool-request': `${NO_PROMPTS}; the server never asks for input`,
  'input-required-result-result-type': MRTR,
  'input-required-result-tampered-state': MRTR,
  'input-required-result-capability-check': MRTR,
  'input-required-result-ignore-extra-params': MRTR,
};

const run = BIN ? describe : describe.skip;

let url: string;
let close: () => Promise<void>;

run('the MCP conformance suite at 2026-07-28', () => {
  beforeAll(async () => {
    ({ url, close } = await mcpBehindGateway('Conformance 2026'));
  });
  afterAll(() => close());

  interface Check { id: string; status: string; errorMessage?: string }

  async function scenario(name: string): Promise<Check[]> {
    const out = await tempFolder('conformance-2026-');
    const r = await runProcess(NODE, [BIN!, 'server', '--url', url, '--scenario', name, '--spec-version', VERSION, '--output-dir', out], { cwd: PROJECT_ROOT, timeoutMs: 90_000 });
    const files = readdirSync(out, { recursive: true }).map(String).filter((f) => f.endsWith('checks.json'));
    if (files.length === 0) throw new Error(`conformance ${name} wrote no checks (exit ${r.code}): ${r.stderr.slice(0, 2000)} ${r.stdout.slice(0, 2000)}`);
    return files.flatMap((f) => JSON.parse(readFileSync(path.join(out, f), 'utf8')) as Check[]);
  }

  it('When the suite lists its 2026-07-28 server scenarios, then each is run here or named with why not', async () => {
    const r = await runProcess(NODE, [BIN!, 'list', '--server'], { cwd: PROJECT_ROOT, timeoutMs: 30_000 });
    const listed = [...r.stdout.matchAll(/^\s+- (\S+) \[([^\]]*)\]/gm)].filter((m) => m[2]!.split(',').includes(VERSION)).map((m) => m[1]!);
    expect(listed.length).toBeGreaterThan(5);
    expect(listed.filter((name) => !APPLICABLE_2026.includes(name) && !(name in NOT_APPLICABLE_2026))).toEqual([]);
  });

  it.each(APPLICABLE_2026)('When the scenario %s runs against /mcp at 2026-07-28, then every check passes but those named untestable', async (name) => {
    const checks = await scenario(name);
    const failed = checks.filter((c) => (c.status === 'FAILURE' || c.status === 'WARNING') && !(c.id in NOT_TESTABLE_CHECKS)).map((c) => `${c.id}: ${c.errorMessage}`);
    expect(failed).toEqual([]);
    expect(checks.some((c) => c.status === 'SUCCESS')).toBe(true);
  });
});
