/**
 * The contract lint's rules of ours, each proven by making the mistake in a copy of the contract:
 * an open response object (closed-responses, fixed by `npm run contract:close`) and a description
 * whose number drifted from the schema (described-limits).
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { closeContractText } from '../../scripts/contract/close.js';
import { findOpenSchemas } from '../../spectral-functions/closed-responses.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const original = () => readFile(path.join(root, 'openapi.yaml'), 'utf8');

/** The Contact schema without its closing line (a schema an engineer adds and forgets to close). */
function openContact(text: string): string {
  const opened = text.replace(/(\n    Contact:\n      type: object\n)      additionalProperties: false\n/, '$1');
  expect(opened).not.toBe(text);
  return opened;
}

/** AttributeValue's string branch loosened to 300 while its description still says 1,000. */
function driftedDescription(text: string): string {
  const drifted = text.replace(/(AttributeValue:\n(?:.*\n){2}\s+- \{ type: string, maxLength: )1000/, '$1300');
  expect(drifted).not.toBe(text);
  return drifted;
}

async function lint(text: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-lint-'));
  dirs.push(dir);
  const file = path.join(dir, 'openapi.yaml');
  await writeFile(file, text);
  const spectral = path.join(root, 'node_modules', '.bin', 'spectral');
  const run = promisify(execFile)(spectral, ['lint', '--fail-severity=error', '--ruleset', path.join(root, '.spectral.yaml'), file], { cwd: root });
  const failure = await run.then(() => undefined, (e: { stdout: string }) => e);
  return failure ? failure.stdout : '';
}

describe('closed responses and described limits in the contract lint', () => {
  it('When a response object is left open and a description drifts from its schema, then the lint fails naming both', async () => {
    const out = await lint(driftedDescription(openContact(await original())));
    expect(out).toMatch(/closed-responses\s+components\.schemas\.Contact: an object the service sends must set additionalProperties/);
    expect(out).toMatch(/described-limits\s+components\.schemas\.AttributeValue: the description says "at most 1,000 characters" but the schema's maxLength is 300/);
    expect(out).toMatch(/described-limits\s+PATCH \/v1\/contacts\/\{id\}: the description says "at most 1,000 characters" but no schema of its request has maxLength 1000/);
  }, 60_000);

  it('When contract:close runs on the open copy, then it closes exactly what was opened, as the shipped contract has it', async () => {
    const text = await original();
    const { text: closed, closed: list, unfixable } = closeContractText(openContact(text));
    expect(list).toEqual(['components.schemas.Contact: additionalProperties: false']);
    expect(unfixable).toEqual([]);
    expect(closed).toBe(text);
  });

  it('When the shipped contracts are read, then no object they send is open', async () => {
    expect(findOpenSchemas(parse(await original()))).toEqual([]);
    expect(findOpenSchemas(parse(await readFile(path.join(root, 'admin-openapi.yaml'), 'utf8')))).toEqual([]);
  });

  it('When a new operation answers an inline open object or an allOf without unevaluatedProperties, then contract:close closes both (flow and block style)', () => {
    const text = [
      'openapi: 3.1.0',
      'info: { title: t, version: 1.0.0 }',
      'paths:',
      '  /v1/things:',
      '    get:',
      '      responses:',
      "        '200':",
      '          description: ok',
      '          content:',
      '            application/json:',
      '              schema:',
      '                type: object # the envelope',
      '                properties:',
      '                  data: { type: object, properties: { id: { type: string } } }',
      '                  more:',
      '                    allOf:',
      "                      - { $ref: '#/components/schemas/Base' }",
      '                      - type: object',
      '                        properties: { id: { type: string } }',
      'components:',
      '  schemas:',
      '    Base: { type: object, properties: { id: { type: string } } }',
      '',
    ].join('\n');
    const { text: closed, closed: list } = closeContractText(text);
    expect(list).toHaveLength(4);
    expect(closed).toContain('                type: object # the envelope\n                additionalProperties: false\n');
    expect(closed).toContain('data: { type: object, properties: { id: { type: string } }, additionalProperties: false }');
    expect(closed).toContain('                  more:\n                    unevaluatedProperties: false\n                    allOf:');
    expect(closed).toContain("Base: { type: object, properties: { id: { type: string } }, additionalProperties: false }");
    expect(findOpenSchemas(parse(closed))).toEqual([]);
  });

  it('When an allOf member is closed but a sibling adds a property, then the finding has no mechanical fix and says why', () => {
    const doc = parse([
      'openapi: 3.1.0',
      'paths:',
      '  /v1/x:',
      '    get:',
      '      responses:',
      "        '200':",
      '          content:',
      '            application/json:',
      '              schema:',
      '                unevaluatedProperties: false',
      '                allOf:',
      "                  - { type: object, additionalProperties: false, properties: { a: { type: string } } }",
      '                  - { type: object, properties: { b: { type: string } } }',
    ].join('\n'));
    const [finding] = findOpenSchemas(doc);
    expect(finding.keyword).toBeUndefined();
    expect(finding.message).toMatch(/its siblings add b/);
  });
});
