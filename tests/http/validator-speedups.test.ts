/**
 * http/validator-speedups.ts skips work of express-openapi-validator that changes nothing for the
 * contracts it is given. These tests hold the conditions those shortcuts rest on, for every
 * shipped contract and the test fixture, so a contract that breaks one fails here first.
 */
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { parse } from 'yaml';
import { SHIPPED_CONTRACTS } from '../../http/contracts.js';
import { onlyLocalRefs, rebaseRefs } from '../../http/validator-speedups.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';

const require = createRequire(import.meta.url);
// The copy of json-schema-ref-parser the validator itself loads.
const refParser = require(require.resolve('@apidevtools/json-schema-ref-parser', { paths: [path.dirname(require.resolve('express-openapi-validator'))] })) as {
  bundle(doc: object): Promise<object>;
};

const files = [...Object.values(SHIPPED_CONTRACTS).map((c) => c.file), 'tests/fixtures/policy-contract.yaml'];
const documentOf = (file: string) => parse(readFileSync(path.join(PROJECT_ROOT, file), 'utf8')) as Record<string, unknown>;

describe('the validator shortcuts hold for the contracts', () => {
  it.each(files)('When %s is bundled, then it comes back unchanged (so the validator may use it as given)', async (file) => {
    const doc = documentOf(file);
    expect(onlyLocalRefs(doc)).toBe(true);
    const bundled = await refParser.bundle(structuredClone(doc));
    // toEqual, not isDeepStrictEqual: the parser's objects come from another realm than the test's.
    expect(bundled).toEqual(doc);
  });

  it.each(files)('When %s is read, then no reference points into its paths (so request schemas carry components alone)', (file) => {
    expect(JSON.stringify(documentOf(file))).not.toContain('"#/paths');
  });

  it('When a document refers outside itself, then it is not taken as local (the validator bundles it)', () => {
    expect(onlyLocalRefs({ components: { schemas: { A: { $ref: 'other.yaml#/A' } } } })).toBe(false);
    expect(onlyLocalRefs({ paths: { '/a': { get: { responses: { 200: { $ref: 42 } } } } } })).toBe(false);
    expect(onlyLocalRefs({ components: { schemas: { A: { items: [{ $ref: '#/components/schemas/B' }] } } } })).toBe(true);
  });

  it("When an operation's schema is compiled apart from the components, then only its references into #/components move to their id; the rest is copied as it was", () => {
    const schema = { type: 'object', properties: { a: { $ref: '#/components/schemas/A' }, b: { items: [{ $ref: '#/components/schemas/B' }] }, c: { $ref: 'other#/x' }, $ref: { type: 'string' } }, default: { $ref: 7 } };
    const out = rebaseRefs(schema, 'urn:x#/components/') as any;
    expect(out.properties.a.$ref).toBe('urn:x#/components/schemas/A');
    expect(out.properties.b.items[0].$ref).toBe('urn:x#/components/schemas/B');
    expect(out.properties.c.$ref).toBe('other#/x');
    expect(out.properties.$ref).toEqual({ type: 'string' });
    expect(out.default).toEqual({ $ref: 7 });
    // The validator's schemas are left as they were.
    expect(schema.properties.a.$ref).toBe('#/components/schemas/A');
  });
});
