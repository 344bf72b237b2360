/**
 * Reads Meta's OpenAPI 3.1 document of the WhatsApp Business Platform as SDK generators read it and
 * turns the part the service uses into plain JSON Schema (2020-12) that a strict validator accepts.
 *
 * The two defects Meta's document has when read as strict JSON Schema (../shared/meta/README.md):
 * 1. `allOf: [Base, { additionalProperties: false, ... }]` refuses the base's own fields. Each allOf
 *    is merged into one object (properties and `required` united; a member's `additionalProperties:
 *    false` then closes the union), the way generators build one class from it. A `discriminator`
 *    becomes an if/then per mapping entry (the branch is picked by the property, as generators do),
 *    so overlapping `oneOf` branches are never counted; the remaining overlapping `oneOf`s of a
 *    webhook change's `value` and of the /calls request and answer (open objects, none required
 *    in the answers) are read as `anyOf`.
 * 2. The webhook part's colliding names were suffixed (`TextMessage_2`, `BaseMessageProperties_1`)
 *    but its references were not: inside the webhook part, a reference to `X` is pointed at its
 *    suffixed twin `X_n` of the same part.
 *
 * Three further corrections, each a place where the document contradicts Meta's own reference
 * pages for a field the service sends (SUPPLEMENTS below, listed so none is added silently).
 *
 * Pure functions over the parsed document; simulator/meta/vendor.ts writes the result to
 * simulator/meta/schemas.json, which the simulator validates with (it runs without ../shared).
 */

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Schema = { [k: string]: Json };
export type Doc = { components: { schemas: Record<string, Schema> }; paths: Record<string, Record<string, Schema>> };

const isObj = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const REF = '#/components/schemas/';
const refName = (ref: string) => (ref.startsWith(REF) ? ref.slice(REF.length) : null);

/**
 * Where the document contradicts Meta's reference pages for what the service sends (each applied
 * after the defect repairs; the test pins this list).
 */
export const SUPPLEMENTS = [
  {
    id: 'biz_opaque_callback_data',
    why: 'Messages reference: "biz_opaque_callback_data: Optional. An arbitrary string, useful for tracking" (max 512 characters), echoed in statuses; absent from BaseMessageProperties, so every closed send schema refuses it.',
  },
  {
    id: 'button-index',
    why: 'Template button `index` is documented as "Position index of the button (0-9)"; its pattern "^[2-6, 11-14]$" is a footnote citation turned into a regex (it refuses "0").',
  },
  {
    id: 'copy_code-button',
    why: 'Template messages reference: a copy_code button (sub_type "copy_code") takes one parameter { type: "coupon_code", coupon_code } (max 15 characters); the sub_type and parameter enums omit them.',
  },
  {
    id: 'carousel-component',
    why: 'Media card carousel templates (sending): a "carousel" component with `cards` (1 to 10 of { card_index, components: header, body and button components }); the document\'s component `type` enum has header, body and button only.',
  },
  {
    id: 'group-webhook-fields',
    why: 'Groups webhooks: Meta\'s own example of the participants change is field "group_participants_update" and its pages name "group_status_update" (group_suspend, group_suspend_cleared); the Change `field` enum lists "group_participant_update" only. A group message\'s status names its `group_id` (StatusObject) and Meta\'s pages give an inbound group message its `group_id`.',
  },
  {
    id: 'limited_time_offer-component',
    why: 'Limited-time offer templates (sending): a "limited_time_offer" component with one parameter { type: "limited_time_offer", limited_time_offer: { expiration_time_ms } }; absent from the document.',
  },
] as const;

/** The schemas of the webhook part: WebhookPayload and everything after it in document order. */
export function webhookPart(doc: Doc): Set<string> {
  const names = Object.keys(doc.components.schemas);
  const at = names.indexOf('WebhookPayload');
  return new Set(at < 0 ? [] : names.slice(at));
}

/** Defect 2: inside the webhook part, `X` → its suffixed twin `X_n` from the same part. */
export function repointWebhookRefs(doc: Doc): Doc {
  const out = clone(doc);
  const part = webhookPart(out);
  const twin = (name: string): string => {
    if (part.has(name)) return name;
    const candidates = [...part].filter((n) => new RegExp(`^${name}_\\d+$`).test(n));
    return candidates.length === 1 ? candidates[0] : name;
  };
  const walk = (v: Json): Json => {
    if (Array.isArray(v)) return v.map(walk);
    if (!isObj(v)) return v;
    const o: Schema = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string' && refName(x)) o[k] = REF + twin(refName(x)!);
      else if (k === 'mapping' && isObj(x)) o[k] = Object.fromEntries(Object.entries(x).map(([m, r]) => [m, typeof r === 'string' && refName(r) ? REF + twin(refName(r)!) : r]));
      else o[k] = walk(x);
    }
    return o;
  };
  for (const name of part) out.components.schemas[name] = walk(out.components.schemas[name]) as Schema;
  return out;
}

/** Defect 1, first half: every allOf merged into one object schema (recursively). */
export function mergeAllOf(doc: Doc): Doc {
  const schemas = doc.components.schemas;
  const memo = new Map<string, Schema>();
  const resolving = new Set<string>();

  /** A referenced base used as an allOf member: merged, without its own dispatch (it is the base). */
  const base = (name: string): Schema => {
    const s = schemas[name];
    if (!s) throw new Error(`unknown schema ${name}`);
    const m = merged(name);
    const { discriminator: _d, ...rest } = m;
    void _d;
    if (isObj(s.discriminator) && Array.isArray(rest.oneOf)) delete rest.oneOf;
    return rest;
  };
  const merged = (name: string): Schema => {
    const hit = memo.get(name);
    if (hit) return hit;
    if (resolving.has(name)) throw new Error(`allOf circle through ${name}`);
    resolving.add(name);
    const out = walk(schemas[name]) as Schema;
    resolving.delete(name);
    memo.set(name, out);
    return out;
  };
  const walk = (v: Json): Json => {
    if (Array.isArray(v)) return v.map(walk);
    if (!isObj(v)) return v;
    const o: Schema = {};
    for (const [k, x] of Object.entries(v)) o[k] = k === 'allOf' ? x : walk(x);
    if (!Array.isArray(o.allOf)) return o;
    const members = (o.allOf as Json[]).map((m) => (isObj(m) && typeof m.$ref === 'string' && refName(m.$ref) ? base(refName(m.$ref)!) : (walk(m) as Schema)));
    delete o.allOf;
    return members.reduce<Schema>((acc, m) => unite(acc, m), o);
  };
  const out = clone(doc);
  for (const name of Object.keys(schemas)) out.components.schemas[name] = merged(name);
  // Inline schemas of the operations too (their allOfs, if any).
  for (const item of Object.values(out.paths)) for (const [m, op] of Object.entries(item)) item[m] = walk(op) as Schema;
  return out;
}

/** Two object schemas as one: properties and required united; a clash of one property keeps both. */
function unite(a: Schema, b: Schema): Schema {
  const out: Schema = { ...a };
  for (const [k, v] of Object.entries(b)) {
    if (k === 'properties' && isObj(v)) {
      const props: Schema = { ...(isObj(a.properties) ? a.properties : {}) };
      for (const [p, s] of Object.entries(v)) props[p] = props[p] === undefined ? s : { allOf: [props[p], s] };
      out.properties = props;
    } else if (k === 'required' && Array.isArray(v)) {
      out.required = [...new Set([...(Array.isArray(a.required) ? a.required : []), ...v])];
    } else if (k === 'additionalProperties') {
      out.additionalProperties = a.additionalProperties === false || v === false ? false : v;
    } else if (k === 'oneOf' || k === 'anyOf') {
      if (a[k] === undefined) out[k] = v;
      else out.allOf = [...(Array.isArray(out.allOf) ? out.allOf : []), { [k]: v }];
    } else if (out[k] === undefined) out[k] = v;
  }
  return out;
}

/** Defect 1, second half: a discriminator picks its branch (if/then per mapping entry). */
export function resolveDiscriminators(doc: Doc): Doc {
  const out = clone(doc);
  const walk = (v: Json): Json => {
    if (Array.isArray(v)) return v.map(walk);
    if (!isObj(v)) return v;
    const o: Schema = {};
    for (const [k, x] of Object.entries(v)) o[k] = walk(x);
    const d = o.discriminator;
    if (!isObj(d) || typeof d.propertyName !== 'string' || !isObj(d.mapping)) return o;
    const prop = d.propertyName;
    const mapping = d.mapping as Record<string, string>;
    delete o.discriminator;
    delete o.oneOf;
    const props: Schema = { ...(isObj(o.properties) ? o.properties : {}) };
    const own = props[prop];
    props[prop] = own === undefined ? { enum: Object.keys(mapping) } : { allOf: [own, { enum: Object.keys(mapping) }] };
    o.properties = props;
    o.required = [...new Set([...(Array.isArray(o.required) ? o.required : []), prop])];
    const branches = Object.entries(mapping).map(([value, ref]) => ({ if: { properties: { [prop]: { const: value } }, required: [prop] }, then: { $ref: ref } }));
    o.allOf = [...(Array.isArray(o.allOf) ? o.allOf : []), ...branches];
    return o;
  };
  for (const [name, s] of Object.entries(out.components.schemas)) out.components.schemas[name] = walk(s) as Schema;
  return out;
}

/** The webhook change's `value` shapes overlap (a text callback matches two): read as anyOf. */
export function overlappingOneOfs(doc: Doc): Doc {
  const out = clone(doc);
  const change = out.components.schemas.Change;
  const value = isObj(change?.properties) ? change.properties.value : undefined;
  if (isObj(value) && Array.isArray(value.oneOf)) {
    value.anyOf = value.oneOf;
    delete value.oneOf;
  }
  // POST /calls: `{ success: true }` and a connect's `{ calls }` each match both open answer shapes.
  const calls = out.paths['/{Version}/{Phone-Number-ID}/calls']?.post as any;
  for (const schema of [calls?.requestBody?.content?.['application/json']?.schema, calls?.responses?.['200']?.content?.['application/json']?.schema]) {
    if (isObj(schema) && Array.isArray(schema.oneOf)) {
      schema.anyOf = schema.oneOf;
      delete schema.oneOf;
    }
  }
  return out;
}

/**
 * A template component the document lacks, of the shape both supplemented ones share:
 * `{ type, <list>: [min..max closed objects, every property of `item` required] }`.
 */
function listComponent(type: string, list: string, [minItems, maxItems]: [number, number], item: Schema): Schema {
  return {
    type: 'object',
    required: ['type', list],
    properties: {
      type: { type: 'string', enum: [type] },
      [list]: {
        type: 'array', minItems, maxItems,
        items: { type: 'object', required: Object.keys(item), additionalProperties: false, properties: item },
      },
    },
  };
}

/** The SUPPLEMENTS, applied to the document as published (the repairs then carry them through). */
export function applySupplements(doc: Doc): Doc {
  const out = clone(doc);
  const s = out.components.schemas;
  const base = s.BaseMessageProperties?.properties;
  if (isObj(base)) base.biz_opaque_callback_data = { type: 'string', maxLength: 512 };
  // A schema's own properties: its `properties`, or those of its inline allOf members.
  const own = (x: Schema | undefined): Schema[] =>
    !x ? [] : [x, ...(Array.isArray(x.allOf) ? x.allOf.filter(isObj) : [])].map((m) => m.properties).filter(isObj);
  const withCopyCode = (e: Json): Json => (isObj(e) && Array.isArray(e.enum) && !e.enum.includes('copy_code') ? { ...e, enum: [...e.enum, 'copy_code'] } : e);
  for (const name of ['TemplateComponent', 'ButtonComponent']) {
    for (const p of own(s[name])) {
      if (p.index !== undefined) p.index = { type: 'string', pattern: '^[0-9]$' };
      if (p.sub_type !== undefined) p.sub_type = withCopyCode(p.sub_type);
    }
  }
  // The carousel and limited-time offer components of a template send (SUPPLEMENTS).
  const tc = s.TemplateComponent;
  if (isObj(tc) && isObj(tc.properties) && isObj(tc.properties.type) && Array.isArray(tc.properties.type.enum)) {
    tc.properties.type.enum = [...tc.properties.type.enum, 'carousel', 'limited_time_offer'];
    s.CarouselComponent = listComponent('carousel', 'cards', [1, 10], {
      card_index: { type: 'integer', minimum: 0, maximum: 9 },
      components: { type: 'array', items: { $ref: REF + 'TemplateComponent' } },
    });
    s.LimitedTimeOfferComponent = listComponent('limited_time_offer', 'parameters', [1, 1], {
      type: { type: 'string', enum: ['limited_time_offer'] },
      limited_time_offer: { type: 'object', required: ['expiration_time_ms'], additionalProperties: false, properties: { expiration_time_ms: { type: 'integer', minimum: 0 } } },
    });
    if (isObj(tc.discriminator) && isObj(tc.discriminator.mapping)) {
      tc.discriminator.mapping.carousel = REF + 'CarouselComponent';
      tc.discriminator.mapping.limited_time_offer = REF + 'LimitedTimeOfferComponent';
    }
  }
  // Groups webhooks (SUPPLEMENTS): the field names Meta's example and pages use.
  const change = s.Change;
  if (isObj(change) && isObj(change.properties) && isObj(change.properties.field) && Array.isArray(change.properties.field.enum)) {
    for (const f of ['group_participants_update', 'group_status_update']) if (!change.properties.field.enum.includes(f)) change.properties.field.enum.push(f);
  }
  const groups = s.Groups;
  if (isObj(groups) && isObj(groups.properties) && isObj(groups.properties.type) && Array.isArray(groups.properties.type.enum)) {
    for (const t of ['group_suspend', 'group_suspend_cleared']) if (!groups.properties.type.enum.includes(t)) groups.properties.type.enum.push(t);
  }
  const bp = s.ButtonParameterObject;
  if (isObj(bp) && isObj(bp.properties)) {
    const typeOf = bp.properties.type;
    if (isObj(typeOf) && Array.isArray(typeOf.enum)) typeOf.enum = [...typeOf.enum, 'coupon_code'];
    s.ButtonCouponCodeParameter = {
      type: 'object',
      required: ['type', 'coupon_code'],
      properties: { type: { enum: ['coupon_code'] }, coupon_code: { type: 'string', maxLength: 15 } },
    };
    if (isObj(bp.discriminator) && isObj(bp.discriminator.mapping)) bp.discriminator.mapping.coupon_code = REF + 'ButtonCouponCodeParameter';
  }
  return out;
}

/** The whole repair, in order: supplements first (they name the document's own shapes), then the defects. */
export function repair(doc: Doc): Doc {
  return overlappingOneOfs(resolveDiscriminators(mergeAllOf(repointWebhookRefs(applySupplements(doc)))));
}

// ---------------------------------------------------------------------------------------------
// The subset the simulator and the contract test use

/** The Graph calls the service makes (and the webhook), by Meta's path templates. */
export const OPERATIONS = [
  'POST /{Version}/{Phone-Number-ID}/messages',
  'POST /{Version}/{Phone-Number-ID}/marketing_messages',
  'POST /{Version}/{Phone-Number-ID}/media',
  'GET /{Version}/{Media-ID}',
  'DELETE /{Version}/{Media-ID}',
  'POST /{Version}/{WABA-ID}/message_templates',
  'GET /{Version}/{WABA-ID}/message_templates',
  'DELETE /{Version}/{WABA-ID}/message_templates',
  'GET /{Version}/{TEMPLATE_ID}',
  'POST /{Version}/{WABA-ID}/flows',
  'GET /{Version}/{Flow-ID}',
  'POST /{Version}/{Flow-ID}/assets',
  'POST /{Version}/{Flow-ID}/publish',
  'POST /{Version}/{Flow-ID}/deprecate',
  'POST /{Version}/{Phone-Number-ID}/calls',
  'POST /{Version}/{Phone-Number-ID}/groups',
  'POST /{Version}/{group_id}/invite_link',
  'DELETE /{Version}/{group_id}/participants',
  'GET /{Version}/{group_id}/join_requests',
  'POST /{Version}/{group_id}/join_requests',
  'DELETE /{Version}/{group_id}/join_requests',
  'POST /{Version}/{group_id}',
  'DELETE /{Version}/{group_id}',
  'POST /whatsapp/webhooks',
] as const;
export type Operation = (typeof OPERATIONS)[number];

export interface OperationSchemas {
  /** Request body schema per content type. */
  request: Record<string, Json>;
  /** The 200 answer's JSON schema, if the document gives one. */
  response: Json | null;
}

export interface Vendored {
  source: string;
  notice: string;
  repairs: string[];
  supplements: string[];
  $defs: Record<string, Json>;
  operations: Record<string, OperationSchemas>;
  errorSchema: string;
}

const DROP = new Set(['example', 'examples', 'description', 'summary', 'externalDocs', 'deprecated', 'title', 'xml', 'readOnly', 'writeOnly']);

function prune(v: Json): Json {
  if (Array.isArray(v)) return v.map(prune);
  if (!isObj(v)) return v;
  const o: Schema = {};
  for (const [k, x] of Object.entries(v)) {
    if (DROP.has(k)) continue; // annotations; property names are kept below
    if (k === 'properties' && isObj(x)) o[k] = Object.fromEntries(Object.entries(x).map(([p, s]) => [p, prune(s)]));
    else o[k] = prune(x);
  }
  return o;
}

function refsOf(v: Json, out: Set<string>): Set<string> {
  if (Array.isArray(v)) v.forEach((x) => refsOf(x, out));
  else if (isObj(v)) for (const [k, x] of Object.entries(v)) k === '$ref' && typeof x === 'string' && refName(x) ? out.add(refName(x)!) : refsOf(x, out);
  return out;
}

const toDefs = (v: Json): Json => JSON.parse(JSON.stringify(v).split(`"${REF}`).join('"#/$defs/')) as Json;

/** The repaired schemas of OPERATIONS and of the error envelope, with only the components they reach. */
export function vendor(raw: Doc, source: string, transform: (d: Doc) => Doc = repair): Vendored {
  const doc = transform(raw);
  const operations: Record<string, OperationSchemas> = {};
  for (const op of OPERATIONS) {
    const [method, path] = op.split(' ');
    const o = doc.paths[path]?.[method.toLowerCase()];
    if (!o) throw new Error(`Meta's document has no ${op}`);
    const request: Record<string, Json> = {};
    const rb = o.requestBody;
    if (isObj(rb) && isObj(rb.content)) for (const [type, c] of Object.entries(rb.content)) if (isObj(c) && c.schema !== undefined) request[type] = prune(c.schema);
    const ok = isObj(o.responses) ? o.responses['200'] : undefined;
    const json = isObj(ok) && isObj(ok.content) ? ok.content['application/json'] : undefined;
    operations[op] = { request, response: isObj(json) && json.schema !== undefined ? prune(json.schema) : null };
  }
  const errorSchema = 'GraphAPIError';
  const need = refsOf(operations as unknown as Json, new Set([errorSchema]));
  for (const name of need) refsOf(doc.components.schemas[name] ?? null, need); // grows while iterating
  const $defs: Record<string, Json> = {};
  for (const name of [...need].sort()) {
    if (!doc.components.schemas[name]) throw new Error(`unresolved reference ${name}`);
    $defs[name] = toDefs(prune(doc.components.schemas[name]));
  }
  return {
    source,
    notice: "Derived from Meta's WhatsApp Business Platform OpenAPI document. MIT License, Copyright (c) Meta Platforms, Inc. and affiliates: see LICENSE beside this file.",
    repairs: ['allOf merged (properties and required united)', 'discriminator → branch by property', 'webhook references → suffixed twins', "webhook change's value oneOf → anyOf", 'calls request and answer oneOf → anyOf'],
    supplements: SUPPLEMENTS.map((s) => s.id),
    $defs,
    operations: toDefs(operations as unknown as Json) as unknown as Record<string, OperationSchemas>,
    errorSchema,
  };
}
