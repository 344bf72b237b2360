/**
 * Writes simulator/meta/schemas.json from Meta's document (default ../shared/meta/business-messaging-api_v23.0.yaml):
 *   node --import tsx simulator/meta/vendor.ts [path-to-yaml]
 * tests/channel/meta-schema.test.ts checks the committed file matches the document.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { vendor } from './repair.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const DEFAULT_SOURCE = path.resolve(here, '../../../shared/meta/business-messaging-api_v23.0.yaml');
export const VENDORED = path.join(here, 'schemas.json');

export function render(source: string): string {
  const doc = YAML.parse(fs.readFileSync(source, 'utf8'));
  return JSON.stringify(vendor(doc, path.basename(source)), null, 1) + '\n';
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const source = path.resolve(process.argv[2] ?? DEFAULT_SOURCE);
  fs.writeFileSync(VENDORED, render(source));
  console.log(`wrote ${path.relative(process.cwd(), VENDORED)} from ${source}`);
}
