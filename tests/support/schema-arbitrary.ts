/**
 * fast-check arbitraries derived from a contract's JSON Schemas (OpenAPI 3.1): `valid(schema)` aims
 * at values the schema accepts (best effort: a `pattern` with a length bound may miss, which only
 * makes a valid case an invalid one), `invalid(schema)` at values it refuses (a wrong type, a
 * missing required property, an undeclared property, a bound crossed, a value off the enum).
 * Used by the contract fuzzer (tests/proofs/contract-fuzz.test.ts).
 */
import fc, { type Arbitrary } from 'fast-check';

type Schema = Record<string, any>;

export class SchemaArbitraries {
  constructor(private readonly document: Schema) {}

  resolve(schema: Schema | undefined): Schema {
    let s = schema ?? {};
    for (let i = 0; i < 20 && typeof s.$ref === 'string'; i++) {
      const parts = s.$ref.replace(/^#\//, '').split('/').map((p: string) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
      s = { ...parts.reduce((o: any, p: string) => o?.[p], this.document), ...Object.fromEntries(Object.entries(s).filter(([k]) => k !== '$ref')) };
    }
    return s;
  }

  /** allOf flattened into one object schema (properties and required merged). */
  private flatten(schema: Schema): Schema {
    const s = this.resolve(schema);
    if (!Array.isArray(s.allOf)) return s;
    const merged: Schema = { ...s, allOf: undefined, properties: { ...(s.properties ?? {}) }, required: [...(s.required ?? [])] };
    for (const part of s.allOf.map((p: Schema) => this.flatten(p))) {
      Object.assign(merged.properties, part.properties ?? {});
      merged.required.push(...(part.required ?? []));
      merged.type ??= part.type;
      if (part.additionalProperties === false) merged.additionalProperties = false;
    }
    return merged;
  }

  valid(schema: Schema | undefined, depth = 0): Arbitrary<unknown> {
    const s = this.flatten(schema ?? {});
    if ('const' in s) return fc.constant(s.const);
    if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
    const alternatives = s.oneOf ?? s.anyOf;
    if (Array.isArray(alternatives)) return fc.oneof(...alternatives.map((a: Schema) => this.valid({ ...s, oneOf: undefined, anyOf: undefined, ...this.resolve(a) }, depth + 1)));
    const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : s.properties ? ['object'] : ['string', 'integer', 'boolean'];
    return fc.oneof(...types.map((t) => this.ofType(t, s, depth)));
  }

  private ofType(type: string, s: Schema, depth: number): Arbitrary<unknown> {
    switch (type) {
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'integer':
        return fc.integer({ min: this.lower(s, -1000), max: this.upper(s, 100_000) });
      case 'number':
        return fc.double({ min: this.lower(s, -1000), max: this.upper(s, 100_000), noNaN: true, noDefaultInfinity: true });
      case 'string':
        return this.string(s);
      case 'array': {
        const min = s.minItems ?? 0;
        const max = Math.min(s.maxItems ?? min + 3, min + 3);
        const items = depth > 4 ? fc.constant('x') : this.valid(s.items ?? {}, depth + 1);
        return s.uniqueItems ? fc.uniqueArray(items, { minLength: min, maxLength: max, selector: (v) => JSON.stringify(v) }) : fc.array(items, { minLength: min, maxLength: max });
      }
      case 'object': {
        const props: Record<string, Schema> = s.properties ?? {};
        const required = new Set<string>(s.required ?? []);
        if (depth > 4) return fc.constant({});
        const model: Record<string, Arbitrary<unknown>> = {};
        for (const [k, v] of Object.entries(props)) model[k] = this.valid(v, depth + 1);
        return fc.record(model, { requiredKeys: Object.keys(props).filter((k) => required.has(k)) });
      }
      default:
        return fc.constant(null);
    }
  }

  private lower(s: Schema, fallback: number): number {
    if (typeof s.exclusiveMinimum === 'number') return s.exclusiveMinimum + 1;
    return typeof s.minimum === 'number' ? s.minimum : fallback;
  }

  private upper(s: Schema, fallback: number): number {
    if (typeof s.exclusiveMaximum === 'number') return s.exclusiveMaximum - 1;
    return typeof s.maximum === 'number' ? s.maximum : Math.max(fallback, this.lower(s, 0));
  }

  private string(s: Schema): Arbitrary<string> {
    const minLength = s.minLength ?? 0;
    const maxLength = Math.min(s.maxLength ?? minLength + 40, minLength + 40);
    switch (s.format) {
      case 'date-time':
        return fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2030-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());
      case 'date':
        return fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2030-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
      case 'uri':
      case 'url':
        // Never a host on the internet (the service downloads some URLs): a closed local port or a name that cannot resolve.
        return fc.tuple(fc.constantFrom('https://127.0.0.1:9', 'http://localhost:9', 'https://host.invalid'), fc.webPath()).map(([h, p]) => h + (p.startsWith('/') ? p : '/' + p));
      case 'email':
        return fc.emailAddress();
      case 'uuid':
        return fc.uuid();
      case 'binary':
        return fc.string({ maxLength: 64 });
    }
    if (typeof s.pattern === 'string') {
      try {
        return fc.stringMatching(new RegExp(s.pattern)).map((v) => (v.length > (s.maxLength ?? Infinity) ? v.slice(0, s.maxLength) : v));
      } catch {
        // A pattern fast-check cannot generate from (lookahead): plain strings, mostly refused.
        return fc.string({ minLength, maxLength });
      }
    }
    return fc.string({ minLength, maxLength, unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789-_.+é✓'.split('')) });
  }

  /** A value the schema refuses (when one exists: `{}` accepts everything, and then a valid one comes back). */
  invalid(schema: Schema | undefined, depth = 0): Arbitrary<unknown> {
    const s = this.flatten(schema ?? {});
    const odd = [12345, -1.5, true, 'a string', [], {}, null, '', 'x'.repeat(5000), '\u0000', '<script>', "'; DROP TABLE x;--", 1e308];
    // Filtered up front (a filtering arbitrary that never passes would spin for ever).
    const wrong = odd.filter((v) => !this.typeAccepts(s, v));
    const options: Array<Arbitrary<unknown>> = [fc.constantFrom<unknown>(...(wrong.length ? wrong : odd))];
    const alternatives = s.oneOf ?? s.anyOf;
    if (Array.isArray(alternatives) && depth < 3) options.push(fc.oneof(...alternatives.map((a: Schema) => this.invalid(a, depth + 1))));
    if (Array.isArray(s.enum)) options.push(fc.string({ minLength: 1, maxLength: 12 }).filter((v) => !s.enum.includes(v)));
    const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
    if (types.includes('string') && typeof s.maxLength === 'number') options.push(fc.constant('y'.repeat(s.maxLength + 1)));
    if (types.includes('string') && typeof s.minLength === 'number' && s.minLength > 0) options.push(fc.constant('y'.repeat(s.minLength - 1)));
    if (types.includes('integer') || types.includes('number')) {
      if (typeof s.maximum === 'number') options.push(fc.constant(s.maximum + 1));
      if (typeof s.minimum === 'number') options.push(fc.constant(s.minimum - 1));
      if (types.includes('integer')) options.push(fc.constant(1.5));
    }
    if (types.includes('array') && typeof s.maxItems === 'number' && s.maxItems < 200) options.push(fc.constant(Array.from({ length: s.maxItems + 1 }, (_, i) => `item${i}`)));
    if ((types.includes('object') || s.properties) && depth < 3) {
      const props: Record<string, Schema> = s.properties ?? {};
      const required: string[] = s.required ?? [];
      const base = this.valid(s, depth + 1) as Arbitrary<Record<string, unknown>>;
      if (required.length) options.push(fc.tuple(base, fc.constantFrom(...required)).map(([o, k]) => omit(o, k)));
      if (s.additionalProperties === false) options.push(base.map((o) => ({ ...(o ?? {}), undeclared_field: 'x' })));
      const names = Object.keys(props);
      if (names.length) {
        options.push(
          fc.tuple(base, fc.constantFrom(...names)).chain(([o, k]) => this.invalid(props[k], depth + 1).map((bad) => ({ ...(o ?? {}), [k]: bad }))),
        );
      }
    }
    return fc.oneof(...options);
  }

  /**
   * The length bounds of a path parameter: the empty id, the shortest and the longest id the schema
   * allows (by `minLength`/`maxLength`, else the pattern's last `{m,n}`), and one character past the
   * longest. Each is built from a character the pattern accepts where one is found, so the bound
   * itself, not the character, is what a case tests.
   */
  pathBoundaries(schema: Schema | undefined): string[] {
    const s = this.resolve(schema);
    const pattern = typeof s.pattern === 'string' ? new RegExp(s.pattern) : undefined;
    const counted = typeof s.pattern === 'string' ? /\{(\d+),(\d+)\}\)?\$?$/.exec(s.pattern) : null;
    const max = typeof s.maxLength === 'number' ? s.maxLength : counted ? Number(counted[2]) + (s.pattern.startsWith('^[') && /^\^\[[^\]]+\]\[/.test(s.pattern) ? 1 : 0) : 64;
    const min = Math.max(1, typeof s.minLength === 'number' ? s.minLength : 1);
    const chars = ['a', '1', '0', 'A', '_'];
    const fill = (n: number) => {
      for (const c of chars) if (!pattern || pattern.test(c.repeat(n))) return c.repeat(n);
      // A fixed shape (a UUID): a valid example cut or padded to the length.
      const uuid = '3f0c2a5e-8a4b-4e1c-9d2f-6b7a1c0e5d42';
      return n === uuid.length ? uuid : uuid.repeat(Math.ceil(n / uuid.length)).slice(0, n);
    };
    return ['', fill(min), fill(Math.min(max, 1024)), fill(Math.min(max, 1024) + 1)];
  }

  /** A rough check that a value has one of the schema's types (for picking wrong ones). */
  private typeAccepts(s: Schema, v: unknown): boolean {
    const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
    if (!types.length) return true;
    const t = v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number') : typeof v;
    if (types.includes(t)) {
      if (t === 'string' && (s.minLength ?? 0) <= (v as string).length && (v as string).length <= (s.maxLength ?? Infinity) && !s.pattern && !s.enum && !s.format) return true;
      if (t !== 'string') return true;
    }
    return t === 'integer' && types.includes('number');
  }
}

function omit(o: Record<string, unknown> | null, key: string): Record<string, unknown> {
  const copy = { ...(o ?? {}) };
  delete copy[key];
  return copy;
}
