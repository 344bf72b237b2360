/**
 * Meta's schemas (simulator/meta/schemas.json, repaired and vendored from Meta's MIT-licensed
 * document; notice in simulator/meta/LICENSE) compiled with ajv, per Graph call. Compiled once per
 * process, on first use (createSimulator warms it: about 0.5 s with loading).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Operation, Vendored } from './repair.js';

// ajv-formats is CommonJS: its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => void;

const here = path.dirname(fileURLToPath(import.meta.url));
// Beside this module when run from the sources; the compiled build (dist/simulator/meta/) has no
// copy of the JSON, so it reads the sources' one.
const VENDORED = [path.join(here, 'schemas.json'), path.resolve(here, '../../../simulator/meta/schemas.json')].find((p) => fs.existsSync(p)) ?? path.join(here, 'schemas.json');

export interface MetaIssue {
  /** JSON pointer into the body ('' for the body itself). */
  instancePath: string;
  keyword: string;
  message: string;
  params: Record<string, unknown>;
}

export interface MetaSchemas {
  readonly vendored: Vendored;
  /** Issues of a request body of `op` sent as `contentType` (empty when Meta's schema accepts it). */
  request(op: Operation, body: unknown, contentType?: string): MetaIssue[];
  /** Issues of the 200 answer of `op` ([] when the document gives no answer schema). */
  response(op: Operation, body: unknown): MetaIssue[];
  /** Issues of a Graph error body (GraphAPIError). */
  error(body: unknown): MetaIssue[];
  /** Issues of `body` against one named schema (e.g. "TextMessage"). */
  named(name: string, body: unknown): MetaIssue[];
}

function isHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

const issues = (v: ValidateFunction, body: unknown): MetaIssue[] =>
  v(body) ? [] : (v.errors ?? []).map((e: ErrorObject) => ({ instancePath: e.instancePath, keyword: e.keyword, message: e.message ?? e.keyword, params: e.params as Record<string, unknown> }));

export function loadMetaSchemas(vendored: Vendored = JSON.parse(fs.readFileSync(VENDORED, 'utf8')) as Vendored): MetaSchemas {
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  addFormats(ajv);
  // OpenAPI's `url` is no JSON Schema format; Meta describes its links as "HTTP/HTTPS only".
  ajv.addFormat('url', { type: 'string', validate: isHttpUrl });
  ajv.addSchema({ $id: 'meta', $defs: vendored.$defs } as object);
  const compiled = new Map<string, ValidateFunction>();
  const compile = (key: string, schema: unknown): ValidateFunction => {
    let v = compiled.get(key);
    if (!v) {
      // References are '#/$defs/X' inside the vendored file: resolve them against the 'meta' schema.
      const rebased = JSON.parse(JSON.stringify(schema).split('"#/$defs/').join('"meta#/$defs/'));
      v = ajv.compile(rebased as object);
      compiled.set(key, v);
    }
    return v;
  };
  const opOf = (op: Operation) => {
    const o = vendored.operations[op];
    if (!o) throw new Error(`no schemas for ${op}`);
    return o;
  };
  return {
    vendored,
    request(op, body, contentType = 'application/json') {
      const o = opOf(op);
      const type = contentType.split(';')[0].trim().toLowerCase();
      const schema = o.request[type];
      if (schema === undefined) return [{ instancePath: '', keyword: 'contentType', message: `${op} takes ${Object.keys(o.request).join(' or ') || 'no body'}, not ${type}`, params: { contentType: type } }];
      return issues(compile(`${op} ${type}`, schema), body);
    },
    response(op, body) {
      const schema = opOf(op).response;
      return schema === null ? [] : issues(compile(`${op} 200`, schema), body);
    },
    error(body) {
      return issues(compile('error', { $ref: `#/$defs/${vendored.errorSchema}` }), body);
    },
    named(name, body) {
      if (!vendored.$defs[name]) throw new Error(`no schema named ${name}`);
      return issues(compile(`#${name}`, { $ref: `#/$defs/${name}` }), body);
    },
  };
}

let shared: MetaSchemas | undefined;
/** The vendored schemas, compiled once per process. */
export const metaSchemas = (): MetaSchemas => (shared ??= loadMetaSchemas());
