/**
 * Each shipped contract is a valid OpenAPI document by the request validator's own schema check,
 * the check the service runs on its contracts as it starts (http/dispatch.ts, validateApiSpec).
 * Test apps serving the shipped contracts skip it (tests/support/app.ts): it is made here, once.
 */
import { describe, expect, it } from '@jest/globals';
import { createRequire } from 'node:module';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { SHIPPED_CONTRACTS } from '../../http/contracts.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';

const require = createRequire(import.meta.url);
const validatorDir = path.dirname(require.resolve('express-openapi-validator'));
const { OpenAPISchemaValidator } = require(path.join(validatorDir, 'framework', 'openapi.schema.validator.js')) as {
  OpenAPISchemaValidator: new (opts: { version: string; validateApiSpec: boolean }) => { validate(doc: unknown): { errors: unknown[] } };
};

const schemaErrors = (doc: { openapi: string }) => new OpenAPISchemaValidator({ version: doc.openapi, validateApiSpec: true }).validate(doc).errors;

describe('the shipped contracts against the OpenAPI schema', () => {
  it.each(Object.values(SHIPPED_CONTRACTS).map((c) => c.file))('When %s is checked as the service checks it at start, then it has no error', (file) => {
    const doc = parse(readFileSync(path.join(PROJECT_ROOT, file), 'utf8')) as { openapi: string };
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(schemaErrors(doc)).toEqual([]);
  });

  it('When an operation of the contract loses its responses, then the check names the error', () => {
    const doc = parse(readFileSync(path.join(PROJECT_ROOT, SHIPPED_CONTRACTS.public.file), 'utf8')) as { openapi: string; paths: Record<string, Record<string, { responses?: unknown }>> };
    const [first] = Object.values(doc.paths);
    const operation = Object.values(first).find((o) => o && typeof o === 'object' && 'responses' in o)!;
    operation.responses = 'none';
    expect(schemaErrors(doc).length).toBeGreaterThan(0);
  });
});
