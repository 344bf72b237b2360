/**
 * The repair of Meta's published document (simulator/meta/repair.ts): each defect shown on a small
 * document of the same shape and on Meta's own document (skipped, and said, without ../shared/meta),
 * the supplements pinned, and the vendored simulator/meta/schemas.json up to date with the document.
 */
import { describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import YAML from 'yaml';
import { loadMetaSchemas } from '../../simulator/meta/validator.js';
import { SUPPLEMENTS, vendor, type Doc } from '../../simulator/meta/repair.js';
import { DEFAULT_SOURCE, render, VENDORED } from '../../simulator/meta/vendor.js';

const REF = (n: string) => ({ $ref: `#/components/schemas/${n}` });
const OP = 'POST /whatsapp/webhooks' as const;

/** A document of Meta's shape with one operation, so vendor() can take it; `root` is what the webhook operation's body refers to. */
function doc(schemas: Record<string, object>, root: string): Doc {
  const paths: Record<string, object> = {};
  for (const op of ['POST /{Version}/{Phone-Number-ID}/messages', 'POST /{Version}/{Phone-Number-ID}/marketing_messages', 'POST /{Version}/{Phone-Number-ID}/media', 'GET /{Version}/{Media-ID}', 'DELETE /{Version}/{Media-ID}', 'POST /{Version}/{WABA-ID}/message_templates', 'GET /{Version}/{WABA-ID}/message_templates', 'DELETE /{Version}/{WABA-ID}/message_templates', 'GET /{Version}/{TEMPLATE_ID}', 'POST /{Version}/{WABA-ID}/flows', 'GET /{Version}/{Flow-ID}', 'POST /{Version}/{Flow-ID}/assets', 'POST /{Version}/{Flow-ID}/publish', 'POST /{Version}/{Flow-ID}/deprecate', 'POST /{Version}/{Phone-Number-ID}/calls', 'POST /{Version}/{Phone-Number-ID}/groups', 'POST /{Version}/{group_id}/invite_link', 'DELETE /{Version}/{group_id}/participants', 'GET /{Version}/{group_id}/join_requests', 'POST /{Version}/{group_id}/join_requests', 'DELETE /{Version}/{group_id}/join_requests', 'POST /{Version}/{group_id}', 'DELETE /{Version}/{group_id}', OP]) {
    const [m, p] = op.split(' ');
    (paths[p] ??= {} as object);
    (paths[p] as Record<string, object>)[m.toLowerCase()] = op === OP ? { requestBody: { content: { 'application/json': { schema: REF(root) } } } } : {};
  }
  return { components: { schemas: { GraphAPIError: { type: 'object' }, ...schemas } as Doc['components']['schemas'] }, paths: paths as Doc['paths'] };
}
const check = (d: Doc, transform?: (d: Doc) => Doc) => {
  const m = loadMetaSchemas(vendor(d, 'test', transform));
  return (body: unknown) => m.request(OP, body);
};
const asIs = (d: Doc) => d;

describe('repair of defect 1: allOf with a closed member', () => {
  const d = doc(
    {
      Base: { type: 'object', required: ['to'], properties: { to: { type: 'string' }, type: { type: 'string' } } },
      TextMsg: { allOf: [REF('Base'), { type: 'object', additionalProperties: false, required: ['text'], properties: { type: { enum: ['text'] }, text: { type: 'string' } } }] },
      NoteMsg: { allOf: [REF('Base'), { type: 'object', additionalProperties: false, required: ['text'], properties: { type: { enum: ['note'] }, text: { type: 'string' } } }] },
      Msg: { discriminator: { propertyName: 'type', mapping: { text: '#/components/schemas/TextMsg', note: '#/components/schemas/NoteMsg' } }, oneOf: [REF('TextMsg'), REF('NoteMsg')] },
    },
    'Msg',
  );

  it('When read strictly as published, then no message validates (the closed member refuses the base fields)', () => {
    expect(check(d, asIs)({ to: '1', type: 'text', text: 'hi' })).not.toEqual([]);
  });

  it('When repaired, then the base and own fields validate; a missing field, an unknown field, a wrong type and an unknown type are refused', () => {
    const v = check(d);
    expect(v({ to: '1', type: 'text', text: 'hi' })).toEqual([]);
    expect(v({ to: '1', type: 'note', text: 'hi' })).toEqual([]);
    expect(v({ type: 'text', text: 'hi' })[0]).toMatchObject({ keyword: 'required', params: { missingProperty: 'to' } });
    expect(v({ to: '1', type: 'text', text: 'hi', extra: 1 })[0]).toMatchObject({ keyword: 'additionalProperties', params: { additionalProperty: 'extra' } });
    expect(v({ to: '1', type: 'text', text: 5 })[0]).toMatchObject({ instancePath: '/text', keyword: 'type' });
    expect(v({ to: '1', type: 'fax', text: 'hi' })[0]).toMatchObject({ instancePath: '/type', keyword: 'enum' });
    expect(v({ to: '1', text: 'hi' })[0]).toMatchObject({ keyword: 'required', params: { missingProperty: 'type' } });
  });
});

describe('repair of defect 2: the webhook part refers to the outbound schemas', () => {
  const d = doc(
    {
      Base: { type: 'object', required: ['to'], properties: { to: { type: 'string' } } },
      Text: { allOf: [REF('Base'), { type: 'object', required: ['text'], properties: { text: { type: 'string' } } }] },
      WebhookPayload: { type: 'object', required: ['messages'], properties: { messages: { type: 'array', items: REF('Incoming') } } },
      Incoming: { discriminator: { propertyName: 'type', mapping: { text: '#/components/schemas/Text' } }, oneOf: [REF('Text')] },
      Base_1: { type: 'object', required: ['from', 'id'], properties: { from: { type: 'string' }, id: { type: 'string' } } },
      Text_2: { allOf: [REF('Base'), { type: 'object', required: ['text'], properties: { text: { type: 'object', required: ['body'] } } }] },
    },
    'WebhookPayload',
  );
  const inbound = { messages: [{ from: '1555', id: 'wamid.1', type: 'text', text: { body: 'Oi' } }] };

  it('When read as published, then an inbound message is checked against the outbound schema and refused', () => {
    expect(check(d, asIs)(inbound)).not.toEqual([]);
  });

  it('When repaired, then the suffixed twins are used: the inbound message validates, one without its body does not', () => {
    const v = check(d);
    expect(v(inbound)).toEqual([]);
    expect(v({ messages: [{ from: '1555', id: 'wamid.1', type: 'text', text: {} }] })).not.toEqual([]);
    expect(v({ messages: [{ id: 'wamid.1', type: 'text', text: { body: 'x' } }] })).not.toEqual([]);
  });
});

describe('supplements', () => {
  it('are exactly the three documented corrections (none added silently)', () => {
    expect(SUPPLEMENTS.map((s) => s.id)).toEqual(['biz_opaque_callback_data', 'button-index', 'copy_code-button', 'carousel-component', 'group-webhook-fields', 'limited_time_offer-component']);
  });
});

const real = fs.existsSync(DEFAULT_SOURCE);
if (!real) console.warn(`meta-schema: ${DEFAULT_SOURCE} is absent; the checks on Meta's own document are skipped.`);
(real ? describe : describe.skip)("Meta's own document", () => {
  const raw = () => YAML.parse(fs.readFileSync(DEFAULT_SOURCE, 'utf8')) as Doc;
  const send = 'POST /{Version}/{Phone-Number-ID}/messages' as const;
  const text = { messaging_product: 'whatsapp', recipient_type: 'individual', to: '14155550100', type: 'text', text: { body: 'hi' } };
  const inboundText = {
    object: 'whatsapp_business_account',
    entry: [{ id: '1', changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '1555', phone_number_id: '2' }, contacts: [{ profile: { name: 'Ada' }, wa_id: '14155550100' }], messages: [{ from: '14155550100', id: 'wamid.x', timestamp: '1767225600', type: 'text', text: { body: 'Oi' } }] } }] }],
  };

  it('When read as published, then a conforming text send and an inbound text callback are refused; repaired, both validate', () => {
    const asPublished = loadMetaSchemas(vendor(raw(), 'raw', asIs));
    expect(asPublished.request(send, text)).not.toEqual([]);
    expect(asPublished.request(OP, inboundText)).not.toEqual([]);
    const repaired = loadMetaSchemas(vendor(raw(), 'repaired'));
    expect(repaired.request(send, text)).toEqual([]);
    expect(repaired.request(OP, inboundText)).toEqual([]);
  });

  it('When repaired, then the supplements hold: biz_opaque_callback_data, button index "0", a copy_code button', () => {
    const m = loadMetaSchemas(vendor(raw(), 'repaired'));
    expect(m.request(send, { ...text, biz_opaque_callback_data: 'snd_1' })).toEqual([]);
    expect(m.request(send, { ...text, biz_opaque_callback_data: 'x'.repeat(513) })).not.toEqual([]);
    const { text: _t, ...base } = text;
    void _t;
    const template = (button: object) => ({ ...base, type: 'template', template: { name: 'n', language: { policy: 'deterministic', code: 'en' }, components: [button] } });
    expect(m.request(send, template({ type: 'button', sub_type: 'quick_reply', index: '0', parameters: [{ type: 'payload', payload: 'p' }] }))).toEqual([]);
    expect(m.request(send, template({ type: 'button', sub_type: 'quick_reply', index: '10', parameters: [{ type: 'payload', payload: 'p' }] }))).not.toEqual([]);
    expect(m.request(send, template({ type: 'button', sub_type: 'copy_code', index: '1', parameters: [{ type: 'coupon_code', coupon_code: 'SAVE10' }] }))).toEqual([]);
    expect(m.request(send, template({ type: 'button', sub_type: 'copy_code', index: '1', parameters: [{ type: 'coupon_code' }] }))).not.toEqual([]);
  });

  it('The vendored simulator/meta/schemas.json is the repair of the document (regenerate: node --import tsx simulator/meta/vendor.ts)', () => {
    expect(fs.readFileSync(VENDORED, 'utf8')).toBe(render(DEFAULT_SOURCE));
  });
});
