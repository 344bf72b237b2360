/**
 * Turns a schema of the contract (OpenAPI 3.1, so JSON Schema 2020-12 plus a few OpenAPI words)
 * into a self-contained JSON Schema an MCP client can compile: every `#/components/schemas/X` it
 * reaches is copied into `$defs` and its references rewritten to `#/$defs/X`, and the words a
 * strict validator would refuse are dropped (`example`, `discriminator`, `nullable`, `x-*`, and
 * `format: binary`, which describes bytes, not a JSON value).
 */

type Schema = Record<string, unknown>;

/** Keywords whose value is a schema. */
const ONE = new Set(['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedItems', 'unevaluatedProperties', 'contentSchema']);
/** Keywords whose value is an array of schemas. */
const MANY = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
/** Keywords whose value maps names to schemas. */
const MAP = new Set(['properties', 'patternProperties', 'dependentSchemas', '$defs']);
const DROPPED = new Set(['example', 'examples', 'discriminator', 'nullable', 'xml', 'externalDocs']);
const COMPONENT = '#/components/schemas/';

export class SchemaBundler {
  private readonly defs = new Map<string, Schema>();

  constructor(
    private readonly components: Record<string, Schema>,
    /** Descriptions inside schemas cut to their first sentence, at most this many characters (a tool list an agent can afford). */
    private readonly opts: { descriptionLimit?: number } = {},
  ) {}

  /** The schema rewritten; the components it reaches are collected for `bundle`. */
  convert(schema: unknown): Schema {
    return this.walk(schema) as Schema;
  }

  /** `schema` with the `$defs` it (and everything converted since the last call) needs. */
  bundle(schema: Schema): Schema {
    if (this.defs.size === 0) return schema;
    const out = { ...schema, $defs: Object.fromEntries([...this.defs].sort(([a], [b]) => a.localeCompare(b))) };
    this.defs.clear();
    return out;
  }

  private walk(node: unknown): unknown {
    if (Array.isArray(node)) return node.map((n) => this.walk(n));
    if (!node || typeof node !== 'object') return node;
    const out: Schema = {};
    for (const [key, value] of Object.entries(node as Schema)) {
      if (DROPPED.has(key) || key.startsWith('x-')) continue;
      // A non-empty string is what every string argument means; saying so on each is bytes, not help.
      if (key === 'minLength' && value === 1 && this.opts.descriptionLimit) continue;
      if (key === 'description' && typeof value === 'string' && this.opts.descriptionLimit) {
        out.description = firstSentence(value, this.opts.descriptionLimit);
        continue;
      }
      if (key === 'format' && value === 'binary') continue;
      if (key === '$ref' && typeof value === 'string') {
        out.$ref = this.ref(value);
      } else if (ONE.has(key)) {
        out[key] = typeof value === 'object' ? this.walk(value) : value;
      } else if (MANY.has(key) && Array.isArray(value)) {
        out[key] = value.map((v) => this.walk(v));
      } else if (MAP.has(key) && value && typeof value === 'object') {
        out[key] = Object.fromEntries(Object.entries(value as Schema).map(([k, v]) => [k, this.walk(v)]));
      } else {
        // enum, const, default, required, descriptions: values, not schemas.
        out[key] = value;
      }
    }
    return out;
  }

  private ref(ref: string): string {
    if (!ref.startsWith(COMPONENT)) throw new Error(`MCP tools: only component schema references are supported, not ${ref}`);
    const name = ref.slice(COMPONENT.length);
    if (!this.defs.has(name)) {
      const target = this.components[name];
      if (!target) throw new Error(`MCP tools: ${ref} is not in the contract`);
      this.defs.set(name, {}); // placeholder first: a schema may refer to itself
      this.defs.set(name, this.walk(target) as Schema);
    }
    return `#/$defs/${name}`;
  }
}

/** Follows one `$ref` to the schema it names, for looking inside (e.g. a response's `data`). */
export function resolveSchemaRef(schema: unknown, components: Record<string, Schema>): Schema | undefined {
  let s = schema as Schema | undefined;
  for (let hops = 0; s && typeof s.$ref === 'string' && hops < 10; hops++) {
    s = (s.$ref as string).startsWith(COMPONENT) ? components[(s.$ref as string).slice(COMPONENT.length)] : undefined;
  }
  return s;
}

/** A description's first sentence, at most `max` characters (cut at a word). */
function firstSentence(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const sentence = /^(.+?[.!?])(\s|$)/.exec(flat)?.[1] ?? flat;
  if (sentence.length <= max) return sentence;
  const cut = sentence.slice(0, max - 1);
  return `${cut.slice(0, Math.max(cut.lastIndexOf(' '), max / 2))}…`;
}
