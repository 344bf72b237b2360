/**
 * The simulator against Meta's published schema, body by body: a corpus of send bodies for each
 * kind of send the service makes (valid ones, varied by seeded fast-check runs within Meta's schema)
 * and their mutations (a field missing, a wrong type, an unknown `type`, an unknown property, both
 * `id` and `link`, a language without `code`, ...). Each is sent to the simulator, and the
 * simulator must accept exactly the bodies Meta's schema accepts (the oracle: the repaired schema
 * compiled by ajv) and refuse the others with Meta's error (GraphAPIError; code 100, 131008 or
 * 131009; the field named). A refused body is not logged as sent and no status callback follows it.
 * The same for template creation (Meta's schema there is loose: the simulator refuses what it
 * refuses, and accepts the valid corpus). Known differences: simulator/README.md.
 *
 * @shared The simulator in process against Meta's schema: it kills nothing and measures no time.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import fc from 'fast-check';
import type { AddressInfo, Server } from 'node:net';
import { createSimulator, type Simulator } from '../../simulator/app.js';
import { metaSchemas } from '../../simulator/meta/validator.js';
import { fieldName, mainIssue } from '../../simulator/meta-check.js';
import { Receiver } from '../support/receiver.js';
import * as S from '../support/samples.js';

type Body = Record<string, any>;
const SEND = 'POST /{Version}/{Phone-Number-ID}/messages' as const;
const CREATE = 'POST /{Version}/{WABA-ID}/message_templates' as const;
const meta = metaSchemas();

let sim: Simulator;
let server: Server;
let base: string;
let receiver: Receiver;
let pn: { phone_number_id: string; waba_id: string; app_id: string; access_token: string };
const media: Record<string, string> = {};
let flowId: string;

const graph = (path: string) => `/v26.0/${path}`;
const authed = (r: request.Test) => r.set('Authorization', `Bearer ${pn.access_token}`);

beforeAll(async () => {
  sim = createSimulator({ clock: { now: () => new Date('2026-03-01T12:00:00Z') }, autoStatusDelaysMs: { sent: 0, delivered: null, read: null } });
  server = await new Promise<Server>((resolve) => {
    const s = sim.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver = await Receiver.start();
  pn = (await request(base).post('/_sim/phone-numbers').send({ callback_url: `${receiver.url}/hook`, app_secret: 'diff-secret' }).expect(201)).body;
  for (const [type, data, mime] of [['image', S.png(), 'image/png'], ['video', S.mp4(2000), 'video/mp4'], ['document', S.pdf(), 'application/pdf'], ['audio', S.isoMedia(2000, 'M4A '), 'audio/mp4']] as const) {
    const res = await authed(request(base).post(graph(`${pn.phone_number_id}/media`))).field('messaging_product', 'whatsapp').field('type', mime).attach('file', data, { filename: `f.${type}`, contentType: mime });
    expect(res.status).toBe(200);
    media[type] = res.body.id;
  }
  const tpl = await authed(request(base).post(graph(`${pn.waba_id}/message_templates`))).send(templateCreate());
  expect(tpl.status).toBe(200);
  await request(base).post(`/_sim/templates/${tpl.body.id}/decision`).send({ decision: 'APPROVED' }).expect(200);
  const flow = await authed(request(base).post(graph(`${pn.waba_id}/flows`))).field('name', 'survey').field('categories', '["SURVEY"]');
  expect(flow.status).toBe(200);
  flowId = flow.body.id;
  const json = { version: '7.0', screens: [{ id: 'START', title: 'Start', terminal: true, layout: { type: 'SingleColumnLayout', children: [{ type: 'Footer', label: 'Done', 'on-click-action': { name: 'complete', payload: {} } }] } }] };
  const asset = await authed(request(base).post(graph(`${flowId}/assets`))).field('name', 'flow.json').field('asset_type', 'FLOW_JSON').attach('file', Buffer.from(JSON.stringify(json)), { filename: 'flow.json', contentType: 'application/json' });
  expect(asset.body.validation_errors).toEqual([]);
  await authed(request(base).post(graph(`${flowId}/publish`))).expect(200);
});

afterAll(async () => {
  await sim?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await receiver?.close();
});

function templateCreate(name = 'order_update'): Body {
  return {
    name,
    language: 'en_US',
    category: 'UTILITY',
    components: [
      { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}', example: { header_text: ['42'] } },
      { type: 'BODY', text: 'Hi {{1}}, your order shipped.', example: { body_text: [['Ada']] } },
      { type: 'FOOTER', text: 'Thanks' },
      { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'Track it' }] },
    ],
  };
}

/** The sends the service makes, each valid (Meta's schema and the simulator's semantics: live media, an approved template, a published flow). */
function validSends(): Record<string, Body> {
  const head = { messaging_product: 'whatsapp', recipient_type: 'individual', to: '14155550100' };
  return {
    text: { ...head, type: 'text', text: { body: 'Your order shipped', preview_url: false }, biz_opaque_callback_data: 'snd_1' },
    'image by id': { ...head, type: 'image', image: { id: media.image, caption: 'A photo' } },
    'image by link': { ...head, type: 'image', image: { link: 'https://example.com/a.png' } },
    'video by id': { ...head, type: 'video', video: { id: media.video, caption: 'A clip' } },
    'document by id': { ...head, type: 'document', document: { id: media.document, caption: 'The menu', filename: 'menu.pdf' } },
    'document by link': { ...head, type: 'document', document: { link: 'https://example.com/menu.pdf', filename: 'menu.pdf' } },
    'audio by id': { ...head, type: 'audio', audio: { id: media.audio } },
    'audio by link': { ...head, type: 'audio', audio: { link: 'https://example.com/voice.m4a' } },
    'interactive buttons': {
      ...head,
      type: 'interactive',
      interactive: { type: 'button', header: { type: 'text', text: 'Order 42' }, body: { text: 'Pick one' }, footer: { text: 'Thanks' }, action: { buttons: [{ type: 'reply', reply: { id: 'yes', title: 'Yes' } }, { type: 'reply', reply: { id: 'no', title: 'No' } }] } },
    },
    'interactive list': {
      ...head,
      type: 'interactive',
      interactive: { type: 'list', body: { text: 'Menu' }, action: { button: 'Open', sections: [{ title: 'Mains', rows: [{ id: 'r1', title: 'Soup', description: 'Hot' }] }] } },
    },
    'interactive flow': {
      ...head,
      type: 'interactive',
      interactive: { type: 'flow', body: { text: 'Tell us' }, action: { name: 'flow', parameters: { flow_message_version: '3', flow_id: flowId, flow_cta: 'Open', flow_token: 'flt_1', flow_action: 'navigate', flow_action_payload: { screen: 'START' } } } },
    },
    template: {
      ...head,
      type: 'template',
      template: {
        name: 'order_update',
        language: { policy: 'deterministic', code: 'en_US' },
        components: [
          { type: 'header', parameters: [{ type: 'text', text: '42' }] },
          { type: 'body', parameters: [{ type: 'text', text: 'Ada' }] },
          { type: 'button', sub_type: 'quick_reply', index: '0', parameters: [{ type: 'payload', payload: 'track' }] },
        ],
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Mutations

type Path = (string | number)[];
const clone = <T>(v: T): T => structuredClone(v);
function paths(v: unknown, at: Path = []): Path[] {
  if (Array.isArray(v)) return v.flatMap((x, i) => [[...at, i], ...paths(x, [...at, i])]);
  if (v && typeof v === 'object') return Object.entries(v).flatMap(([k, x]) => [[...at, k], ...paths(x, [...at, k])]);
  return [];
}
const objects = (v: unknown): Path[] => [[], ...paths(v).filter((p) => { const x = get(v, p); return x !== null && typeof x === 'object' && !Array.isArray(x); })];
const get = (v: any, p: Path): any => p.reduce((x, k) => x?.[k], v);
function set(v: Body, p: Path, value: unknown): Body {
  const out = clone(v);
  const parent = get(out, p.slice(0, -1));
  if (value === undefined) {
    if (Array.isArray(parent)) parent.splice(p.at(-1) as number, 1);
    else delete parent[p.at(-1)!];
  } else if (p.length === 0) return value as Body;
  else parent[p.at(-1)!] = value;
  return out;
}
const wrongType = (x: unknown): unknown => (typeof x === 'string' ? 42 : typeof x === 'number' || typeof x === 'boolean' ? 'x' : Array.isArray(x) ? { a: 1 } : 'x');

interface Case {
  name: string;
  body: Body;
}

function mutations(name: string, valid: Body): Case[] {
  const out: Case[] = [];
  for (const p of paths(valid)) {
    if (p.includes('biz_opaque_callback_data')) continue;
    out.push({ name: `${name}: without ${p.join('.')}`, body: set(valid, p, undefined) });
    out.push({ name: `${name}: ${p.join('.')} of a wrong type`, body: set(valid, p, wrongType(get(valid, p))) });
  }
  for (const p of objects(valid)) out.push({ name: `${name}: unknown property at ${p.join('.') || 'the top'}`, body: set(valid, [...p, 'unexpected_key'], 1) });
  for (const p of paths(valid).filter((q) => q.at(-1) === 'type')) out.push({ name: `${name}: unknown ${p.join('.')}`, body: set(valid, p, 'no_such_type') });
  for (const p of paths(valid).filter((q) => q.at(-1) === 'id' && typeof get(valid, q) === 'string' && /image|video|document|audio/.test(String(q[0])))) {
    out.push({ name: `${name}: both id and link`, body: set(valid, [...p.slice(0, -1), 'link'], 'https://example.com/x') });
  }
  for (const p of paths(valid).filter((q) => q.at(-1) === 'link')) out.push({ name: `${name}: a link that is no http(s) URL`, body: set(valid, p, 'ftp://example.com/x') });
  return out;
}

/** Valid variations within Meta's schema and the simulator's semantics (seeded). */
function variations(valid: Record<string, Body>, runs: number): Case[] {
  const word = fc.stringMatching(/^[A-Za-z0-9 ]{1,20}$/);
  const variation = fc.record({
    kind: fc.constantFrom(...Object.keys(valid)),
    to: fc.constantFrom('14155550100', '+14155550100', '+1 415 555 0100', '5511999990000'),
    context: fc.option(fc.constantFrom('wamid.HBgLMTQxNTU1NTAxMDAVAgARGBI', 'wamid.abc'), { nil: undefined }),
    opaque: fc.option(fc.string({ maxLength: 512 }), { nil: undefined }),
    caption: fc.option(word, { nil: undefined }),
    footer: fc.option(word, { nil: undefined }),
    preview: fc.option(fc.boolean(), { nil: undefined }),
  });
  return fc.sample(variation, { numRuns: runs, seed: 20261123 }).map((v, i) => {
    const body = clone(valid[v.kind]);
    body.to = v.to;
    if (v.context) body.context = { message_id: v.context };
    if (v.opaque !== undefined) body.biz_opaque_callback_data = v.opaque;
    else delete body.biz_opaque_callback_data;
    const obj = body[body.type];
    if (v.caption && ['image', 'video', 'document'].includes(body.type)) obj.caption = v.caption;
    if (v.footer && body.type === 'interactive') obj.footer = { text: v.footer };
    if (v.preview !== undefined && body.type === 'text') obj.preview_url = v.preview;
    return { name: `${v.kind}: variation ${i}`, body };
  });
}

/**
 * Where the simulator knowingly refuses a body Meta's schema accepts (simulator/README.md, "Known
 * differences from Meta"): rules the Cloud API applies that the published schema does not state,
 * and checks against the simulator's state (the template's placeholders).
 */
const KNOWN_STRICTER: { why: string; code: number; details: RegExp }[] = [
  { why: 'a text message needs text.body', code: 131008, details: /^The parameter text\['body'\] is required\.$/ },
  { why: 'an interactive message (but product) needs a body', code: 131008, details: /^The parameter interactive\['body'\] is required\.$/ },
  { why: 'a text header needs its text', code: 131008, details: /^The parameter interactive\['header'\]\['text'\] is required\.$/ },
  { why: 'a list section needs rows', code: 131009, details: /\['rows'\] must be a non-empty array\.$/ },
  { why: 'caption and filename are strings (the schema refers to a MediaObject that does not declare them)', code: 131009, details: /^Param (image|video|document)\['(caption|filename)'\] must be a string\.$/ },
  { why: 'template parameters must match the template', code: 132000, details: /number of localizable_params \(\d+\) does not match/ },
];
const knownStricter = (e: { code?: number; error_data?: { details?: string } } | undefined) => KNOWN_STRICTER.find((k) => e?.code === k.code && k.details.test(e?.error_data?.details ?? ''));

// ---------------------------------------------------------------------------------------------
// Generated from Meta's schema: the optional fields it declares for a body, filled with values of
// the declared type, enum, length and format.

const defs = meta.vendored.$defs as Record<string, any>;
const deref = (s: any): any => {
  while (s && typeof s === 'object' && typeof s.$ref === 'string') s = defs[s.$ref.replace(/^.*#\/\$defs\//, '')];
  return s;
};
/** The schema and the members of it that apply to `value` (allOf members, then-branches whose if matches). */
function applicable(schema: any, value: any): any[] {
  const s = deref(schema);
  if (!s || typeof s !== 'object') return [];
  const out = [s];
  for (const m of s.allOf ?? []) {
    if (m.if) {
      const matches = Object.entries<any>(m.if.properties ?? {}).every(([k, c]) => value?.[k] === c.const);
      if (matches) out.push(...applicable(m.then, value));
    } else out.push(...applicable(m, value));
  }
  // A oneOf/anyOf branch applies when the value has every field it requires (the value's own branch).
  for (const b of [...(s.oneOf ?? []), ...(s.anyOf ?? [])]) {
    const d = deref(b);
    if (d?.properties && (d.required ?? []).every((k: string) => value && typeof value === 'object' && k in value)) out.push(...applicable(d, value));
  }
  return out;
}
/** A declared property's schema when it is a plain value (string, boolean, number, enum). */
function leafOf(schema: any): any | null {
  const s = deref(schema);
  if (!s || typeof s !== 'object') return null;
  if (Array.isArray(s.enum) || ['string', 'boolean', 'integer', 'number'].includes(s.type)) return s;
  // A flat object (every property a plain value), such as context or footer.
  const props = Object.entries<any>(s.properties ?? {});
  if (s.type === 'object' && props.length && !s.oneOf && !s.allOf && props.every(([, p]) => { const d = deref(p); return d && (Array.isArray(d.enum) || ['string', 'boolean', 'integer', 'number'].includes(d.type)); })) return s;
  return null;
}
/** The optional plain fields Meta's schema declares for `value` and that it does not have. */
function optionalLeaves(schema: any, value: any, at: Path = []): { path: Path; schema: any }[] {
  const parts = applicable(schema, value);
  const out = new Map<string, { path: Path; schema: any }>();
  const add = (xs: { path: Path; schema: any }[]) => xs.forEach((x) => out.set(JSON.stringify(x.path), x));
  if (Array.isArray(value)) {
    for (const p of parts) if (p.items) value.forEach((v, i) => add(optionalLeaves(p.items, v, [...at, i])));
  } else if (value && typeof value === 'object') {
    for (const p of parts) {
      for (const [k, sub] of Object.entries<any>(p.properties ?? {})) {
        if (k in value) add(optionalLeaves(sub, value[k], [...at, k]));
        else {
          const leaf = leafOf(sub);
          if (leaf) add([{ path: [...at, k], schema: leaf }]);
        }
      }
    }
  }
  return [...out.values()];
}
function valueFor(s: any): fc.Arbitrary<unknown> {
  if (s.type === 'object') {
    const props = Object.fromEntries(Object.entries<any>(s.properties).map(([k, p]) => [k, valueFor(deref(p))]));
    return fc.record(props, { requiredKeys: s.required ?? [] });
  }
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
  if (s.type === 'boolean') return fc.boolean();
  if (s.type === 'integer' || s.type === 'number') return fc.integer({ min: s.minimum ?? 0, max: s.maximum ?? 1000 });
  if (s.format === 'url') return fc.constantFrom('https://example.com/a', 'http://cdn.example.org/b?c=1');
  if (typeof s.pattern === 'string') return fc.stringMatching(new RegExp(s.pattern));
  const max = Math.min(s.maxLength ?? 30, 30);
  return fc.stringMatching(new RegExp(`^[A-Za-z0-9 ]{${Math.max(s.minLength ?? 1, 1)},${max}}$`));
}
/** A body without the optional fields the service may leave out, for the generator to fill from the schema. */
function minimal(b: Body): Body {
  const out = clone(b);
  delete out.biz_opaque_callback_data;
  const o = out[out.type];
  if (out.type === 'text') delete o.preview_url;
  if (['image', 'video', 'document'].includes(out.type)) delete o.caption;
  if (out.type === 'interactive') {
    delete o.header;
    delete o.footer;
    for (const sec of o.action.sections ?? []) for (const r of sec.rows) delete r.description;
    if (o.action.parameters) for (const k of ['flow_token', 'flow_action', 'flow_action_payload']) delete o.action.parameters[k];
  }
  return out;
}

function generated(valid: Record<string, Body>, runs: number): Case[] {
  valid = Object.fromEntries(Object.entries(valid).map(([k, b]) => [k, minimal(b)]));
  const kinds = Object.keys(valid);
  const arb = fc.constantFrom(...kinds).chain((kind) => {
    const leaves = optionalLeaves({ $ref: '#/$defs/Message' }, valid[kind]);
    return fc.tuple(fc.constant(kind), fc.subarray(leaves, { minLength: Math.min(1, leaves.length) }).chain((chosen) => fc.tuple(fc.constant(chosen), fc.tuple(...chosen.map((l) => valueFor(l.schema))))));
  });
  return fc.sample(arb, { numRuns: runs, seed: 17 }).map(([kind, [chosen, values]], i) => {
    let body = clone(valid[kind]);
    chosen.forEach((l, j) => (body = set(body, l.path, values[j])));
    return { name: `${kind}: schema-generated ${i} (${chosen.map((l) => l.path.join('.')).join(', ') || 'as is'})`, body };
  });
}

/** The key an issue is about, for the error's details to name. */
function keyOf(issue: { instancePath: string; keyword: string; params: Record<string, unknown> }): string {
  if (issue.keyword === 'required') return String(issue.params.missingProperty);
  if (issue.keyword === 'additionalProperties') return String(issue.params.additionalProperty);
  return fieldName(issue.instancePath);
}

describe('simulator vs Meta’s schema, send bodies', () => {
  it('When each body of the corpus is sent, then the simulator accepts exactly those Meta’s schema accepts and refuses the others with Meta’s error; refused ones are neither logged nor called back', async () => {
    const valid = validSends();
    const corpus: Case[] = [
      ...Object.entries(valid).map(([name, body]) => ({ name, body })),
      ...variations(valid, 120),
      ...generated(valid, 120),
      ...Object.entries(valid).flatMap(([name, body]) => mutations(name, body)),
    ];
    const fields = new Set(corpus.filter((c) => c.name.includes('schema-generated')).flatMap((c) => c.name.replace(/^.*\((.*)\)$/, '$1').split(', ')));
    console.log(`schema-generated optional fields: ${[...fields].sort().join(', ')}`);
    expect(fields.size).toBeGreaterThan(5);
    const messagesBefore = (await request(base).get(`/_sim/messages?phone_number_id=${pn.phone_number_id}&limit=10000`)).body.data.length;
    const disagreements: unknown[] = [];
    const known = new Map<string, number>();
    const accepted = new Set<string>();
    let schemaAccepts = 0;
    for (const c of corpus) {
      const issues = meta.request(SEND, c.body);
      const ok = issues.length === 0;
      if (ok) schemaAccepts++;
      const res = await authed(request(base).post(graph(`${pn.phone_number_id}/messages`))).send(c.body);
      const stricter = ok && res.status !== 200 ? knownStricter(res.body.error) : undefined;
      if (stricter) {
        known.set(stricter.why, (known.get(stricter.why) ?? 0) + 1);
        continue;
      }
      if (ok !== (res.status === 200)) {
        disagreements.push({ case: c.name, schema: ok ? 'accepts' : issues[0], simulator: res.status === 200 ? 'accepts' : res.body.error });
        continue;
      }
      if (ok) {
        expect(meta.response(SEND, res.body)).toEqual([]);
        accepted.add(res.body.messages[0].id);
        continue;
      }
      const e = res.body.error;
      const problem =
        meta.error(res.body).length ? 'not GraphAPIError'
        : ![100, 131008, 131009].includes(e.code) ? `code ${e.code}`
        : !String(e.error_data?.details).includes(keyOf(mainIssue(issues)).replace(/^.*\['(.+)'\]$/, '$1')) ? `details do not name ${keyOf(mainIssue(issues))}`
        : null;
      if (problem) disagreements.push({ case: c.name, problem, error: e });
    }
    // The figure: how many bodies, how many Meta's schema accepts, how many agree.
    const knownCount = [...known.values()].reduce((a, b) => a + b, 0);
    console.log(
      `simulator vs Meta's schema (sends): ${corpus.length - disagreements.length - knownCount} of ${corpus.length} bodies agree ` +
        `(${schemaAccepts} accepted by the schema, ${corpus.length - schemaAccepts} refused); ${knownCount} accepted by the schema are refused by the ` +
        `simulator's documented stricter checks: ${[...known].map(([w, n]) => `${w} (${n})`).join('; ')}; ${disagreements.length} disagree`,
    );
    expect(disagreements).toEqual([]);
    expect(schemaAccepts).toBeGreaterThan(100);
    expect(corpus.length - schemaAccepts).toBeGreaterThan(200);

    // Nothing refused was logged as sent; only accepted sends get statuses.
    const logged = (await request(base).get(`/_sim/messages?phone_number_id=${pn.phone_number_id}&limit=10000`)).body.data as { wamid: string }[];
    expect(logged.length - messagesBefore).toBe(accepted.size);
    expect(new Set(logged.slice(messagesBefore).map((m) => m.wamid))).toEqual(accepted);
    const statuses = () => receiver.at('/hook').flatMap((r) => r.body.entry[0].changes[0].value.statuses ?? []) as { id: string; status: string }[];
    await receiver.until(() => statuses().length >= accepted.size, 20_000, `${accepted.size} sent statuses`);
    expect(statuses().every((s) => accepted.has(s.id) && s.status === 'sent')).toBe(true);
    expect(new Set(statuses().map((s) => s.id))).toEqual(accepted);
  });
});

describe('simulator vs Meta’s schema, template creation', () => {
  it('When template bodies are created, then what Meta’s schema refuses is refused with code 100 and the valid corpus is accepted', async () => {
    const valid = templateCreate('corpus_base');
    const corpus: Case[] = [...mutations('create', valid), ...fc.sample(fc.stringMatching(/^[a-z][a-z0-9_]{0,30}$/), { numRuns: 40, seed: 7 }).map((n, i) => ({ name: `valid ${i}`, body: templateCreate(`v${i}_${n}`) }))];
    const problems: unknown[] = [];
    let refusedBySchema = 0;
    for (const c of corpus) {
      const issues = meta.request(CREATE, c.body);
      const res = await authed(request(base).post(graph(`${pn.waba_id}/message_templates`))).send(c.body);
      if (issues.length) {
        refusedBySchema++;
        const named = keyOf(mainIssue(issues)).replace(/^.*\['(.+)'\]$/, '$1');
        if (res.status !== 400 || res.body.error?.code !== 100 || meta.error(res.body).length || !String(res.body.error.error_data?.details).includes(named)) {
          problems.push({ case: c.name, issue: issues[0], status: res.status, answer: res.body });
        }
      } else if (c.name.startsWith('valid') && res.status !== 200) problems.push({ case: c.name, status: res.status, answer: res.body });
    }
    console.log(`simulator vs Meta's schema (template create): ${corpus.length - problems.length} of ${corpus.length} bodies agree (${refusedBySchema} refused by the schema)`);
    expect(problems).toEqual([]);
    expect(refusedBySchema).toBeGreaterThan(10);
  });
});
