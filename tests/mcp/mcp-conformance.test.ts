/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned to 0.1.13, the
 * last that runs on Node 20: 0.1.14 and later import `fs.globSync`, Node 22) against /mcp, as CI
 * runs it. The suite connects without credentials, so it reaches the service through a gateway on
 * loopback that adds an operator-issued token, as a connector configured with a bearer does; the
 * service's PUBLIC_BASE_URL is that gateway, so its Origin and Host rules are the ones tested.
 *
 * The scenarios that apply to a stateless, tools-only server (APPLICABLE), and why the others do
 * not (NOT_APPLICABLE), are listed below; each applicable one must pass every check.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';
import { mcpBehindGateway } from '../support/gateway.js';
import { runProcess, tempFolder } from '../support/local.js';

const BIN = process.env.CONFORMANCE_BIN ?? path.join(PROJECT_ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

/** Scenarios of `conformance list --server` that apply to this server. */
export const APPLICABLE = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];
/** The others, and why they do not apply. */
export const NOT_APPLICABLE: Record<string, string> = {
  'logging-set-level': 'no logging capability: the service logs on its side, not to the agent',
  'completion-complete': 'no prompts or resource templates to complete',
  'tools-call-simple-text': 'calls the reference server\'s own test tools (test_simple_text …), which this server does not have',
  'tools-call-image': 'a reference test tool',
  'tools-call-audio': 'a reference test tool',
  'tools-call-embedded-resource': 'a reference test tool',
  'tools-call-mixed-content': 'a reference test tool',
  'tools-call-with-logging': 'a reference test tool; no logging capability',
  'tools-call-error': 'a reference test tool (our tool errors are tested in tests/mcp/mcp-server.test.ts)',
  'tools-call-with-progress': 'a reference test tool; no progress notifications (each call answers at once)',
  'tools-call-sampling': 'a reference test tool; the server never asks the client to sample',
  'tools-call-elicitation': 'a reference test tool; the server never elicits',
  'json-schema-2020-12': 'a reference test tool',
  'elicitation-sep1034-defaults': 'the server never elicits',
  'elicitation-sep1330-enums': 'the server never elicits',
  'server-sse-polling': 'stateless: no server-to-client stream (GET answers 405), answers are JSON',
  'server-sse-multiple-streams': 'stateless: no streams',
  'resources-list': 'no resources capability',
  'resources-read-text': 'no resources',
  'resources-read-binary': 'no resources',
  'resources-templates-read': 'no resources',
  'resources-subscribe': 'no resources',
  'resources-unsubscribe': 'no resources',
  'prompts-list': 'no prompts capability',
  'prompts-get-simple': 'no prompts',
  'prompts-get-with-args': 'no prompts',
  'prompts-get-embedded-resource': 'no prompts',
  'prompts-get-with-image': 'no prompts',
};

let url: string;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ url, close } = await mcpBehindGateway('Conformance'));
});
afterAll(() => close());

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
}

async function scenario(name: string): Promise<Check[]> {
  const out = await tempFolder('conformance-');
  const run = await runProcess(process.execPath, [BIN, 'server', '--url', url, '--scenario', name, '--output-dir', out], { cwd: PROJECT_ROOT, timeoutMs: 60_000 });
  const files = readdirSync(out, { recursive: true }).map(String).filter((f) => f.endsWith('checks.json'));
  if (files.length === 0) throw new Error(`conformance ${name} wrote no checks (exit ${run.code}): ${run.stderr.slice(0, 2000)} ${run.stdout.slice(0, 2000)}`);
  return files.flatMap((f) => JSON.parse(readFileSync(path.join(out, f), 'utf8')) as Check[]);
}

describe('the MCP conformance suite', () => {
  it('When the suite lists its server scenarios, then each is either run here or named with the reason it does not apply', async () => {
    expect(existsSync(BIN)).toBe(true);
    const run = await runProcess(process.execPath, [BIN, 'list', '--server'], { cwd: PROJECT_ROOT, timeoutMs: 30_000 });
    const listed = [...run.stdout.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
    expect(listed.length).toBeGreaterThan(10);
    for (const name of listed) expect({ name, covered: APPLICABLE.includes(name) || name in NOT_APPLICABLE }).toEqual({ name, covered: true });
  });

  it.each(APPLICABLE)('When the scenario %s runs against /mcp, then every check passes', async (name) => {
    const checks = await scenario(name);
    const failed = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    expect(failed).toEqual([]);
    expect(checks.some((c) => c.status === 'SUCCESS')).toBe(true);
  });
});
