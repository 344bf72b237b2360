/**
 * The simulator takes Meta's own template examples (issue 70, item 5): every request example of
 * POST /{Version}/{WABA-ID}/message_templates in Meta's published contract (../shared/meta, copied
 * to tests/fixtures/meta-template-examples.json and compared with the document when it is present)
 * is accepted by the simulator's Graph endpoint, authentication templates as Meta documents them
 * included (a BODY with only add_security_recommendation, a FOOTER with only code_expiration_minutes,
 * an OTP button: COPY_CODE, ONE_TAP, and ZERO_TAP from Meta's guide); and through our API's
 * POST /v1/templates wherever our contract allows the shape.
 *
 * What an example holds that is Meta's account, not the shape, is replaced: `<TEMPLATE_NAME>` and
 * the repeated names (one name per test), and the header handles (issued to Meta's app; here the
 * simulator's resumable upload, or our header-sample endpoint, issues them).
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import YAML from 'yaml';
import { DEFAULT_SOURCE } from '../../simulator/meta/vendor.js';
import { startTestApp, type TestApp } from '../support/app.js';
import * as S from '../support/samples.js';

type Component = Record<string, unknown> & { type: string; format?: string; example?: Record<string, unknown> };
type Example = { name: string; language: string; category: string; components: Component[] };

const FIXTURE = JSON.parse(fs.readFileSync(new URL('../fixtures/meta-template-examples.json', import.meta.url), 'utf8')) as { examples: Record<string, Example> };
const EXAMPLES = Object.entries(FIXTURE.examples);

/** Meta's guide (Authentication templates, "Zero-tap autofill buttons"): not among the document's examples. */
const ZERO_TAP: Example = {
  name: 'zero_tap_auth_template', language: 'en_US', category: 'AUTHENTICATION',
  components: [
    { type: 'BODY', add_security_recommendation: true },
    { type: 'FOOTER', code_expiration_minutes: 5 },
    { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'ZERO_TAP', text: 'Copy Code', autofill_text: 'Autofill', zero_tap_terms_accepted: true, supported_apps: [{ package_name: 'com.example.luckyshrub', signature_hash: 'K8a/AINcGX7' }] }] },
  ],
};
const ALL: Array<[string, Example]> = [...EXAMPLES, ['Zero-tap authentication template (Meta\'s guide)', ZERO_TAP]];

const MIME: Record<string, { mime: string; bytes: () => Buffer; file: string }> = {
  IMAGE: { mime: 'image/png', bytes: () => S.png(3000), file: 'sample.png' },
  DOCUMENT: { mime: 'application/pdf', bytes: () => S.pdf(3000), file: 'sample.pdf' },
};

/** The example with its name and its media headers' handles replaced. */
async function filled(ex: Example, name: string, handleFor: (format: string) => Promise<string>): Promise<Example> {
  const components: Component[] = [];
  for (const c of ex.components) {
    if (String(c.type).toUpperCase() === 'HEADER' && c.format && MIME[c.format.toUpperCase()]) {
      components.push({ ...c, example: { ...c.example, header_handle: [await handleFor(c.format.toUpperCase())] } });
    } else components.push(c);
  }
  return { ...ex, name, components };
}

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
}, 60_000);
afterAll(async () => t?.close());

const present = fs.existsSync(DEFAULT_SOURCE);
(present ? it : it.skip)("When Meta's document is read, then the fixture holds every template-creation example of it, unchanged", () => {
  const doc = YAML.parse(fs.readFileSync(DEFAULT_SOURCE, 'utf8'));
  const examples = doc.paths['/{Version}/{WABA-ID}/message_templates'].post.requestBody.content['application/json'].examples as Record<string, { value: unknown }>;
  expect(FIXTURE.examples).toEqual(Object.fromEntries(Object.entries(examples).map(([k, v]) => [k, v.value])));
  expect(EXAMPLES.filter(([, e]) => e.category === 'AUTHENTICATION').length).toBeGreaterThanOrEqual(2);
});

describe("the simulator's Graph endpoint takes Meta's examples", () => {
  let pn: { waba_id: string; app_id: string; access_token: string };
  const sim = () => request(t.sim!.url);
  const auth = () => ({ Authorization: `Bearer ${pn.access_token}` });
  /** A handle from the simulator's Resumable Upload API, as Meta's examples carry Meta's. */
  const upload = async (format: string) => {
    const { mime, bytes, file } = MIME[format];
    const b = bytes();
    const s = await sim().post(`/v26.0/${pn.app_id}/uploads`).query({ file_name: file, file_length: b.length, file_type: mime }).set(auth());
    expect(s.status).toBe(200);
    const h = await sim().post(`/v26.0/${s.body.id}`).set('Authorization', `OAuth ${pn.access_token}`).set('file_offset', '0').set('content-type', 'application/octet-stream').send(b);
    expect(h.status).toBe(200);
    return h.body.h as string;
  };
  beforeAll(async () => {
    const res = await sim().post('/_sim/phone-numbers').send({ app_secret: 'meta-examples', callback_url: 'http://127.0.0.1:9/none' });
    expect(res.status).toBe(201);
    pn = res.body;
  });

  it.each(ALL.map(([title, ex], i) => [title, ex, i] as const))('When Meta\'s example "%s" is posted to the simulator, then it is accepted (PENDING, its category)', async (_title, ex, i) => {
    const body = await filled(ex, `meta_example_${i}`, upload);
    const res = await sim().post(`/v26.0/${pn.waba_id}/message_templates`).set(auth()).send(body);
    expect(res.body).toEqual({ id: expect.stringMatching(/^\d+$/), status: 'PENDING', category: ex.category });
    expect(res.status).toBe(200);
  });

  it.each([
    ['an OTP button outside AUTHENTICATION', 'UTILITY', [{ type: 'BODY', text: 'Code' }, { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'COPY_CODE' }] }], /AUTHENTICATION/],
    ['an unknown otp_type', 'AUTHENTICATION', [{ type: 'BODY', add_security_recommendation: true }, { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'TWO_TAP' }] }], /otp_type/],
    ['a one-tap button without its app', 'AUTHENTICATION', [{ type: 'BODY' }, { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'ONE_TAP' }] }], /package_name/],
    ['a zero-tap button without the terms', 'AUTHENTICATION', [{ type: 'BODY' }, { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'ZERO_TAP', package_name: 'com.example.app', signature_hash: 'K8a/AINcGX7' }] }], /zero_tap_terms_accepted/],
    ['a code expiring after 91 minutes', 'AUTHENTICATION', [{ type: 'BODY' }, { type: 'FOOTER', code_expiration_minutes: 91 }, { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'COPY_CODE' }] }], /code_expiration_minutes/],
    ['an authentication template with a second button', 'AUTHENTICATION', [{ type: 'BODY', add_security_recommendation: true }, { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'COPY_CODE' }, { type: 'QUICK_REPLY', text: 'Help' }] }], /one OTP button/],
  ])('When a template has %s, then the simulator refuses it as Meta does (code 100)', async (_title, category, components, detail) => {
    const res = await sim().post(`/v26.0/${pn.waba_id}/message_templates`).set(auth()).send({ name: 'refused_otp', language: 'en_US', category, components });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 100, type: 'OAuthException' });
    expect(res.body.error.error_user_msg).toMatch(detail);
  });
});

/**
 * Our contract names component types in capitals (TemplateComponent.type): Meta's flow examples
 * write `type: body`, which our API refuses before the channel (400 invalid_request); every other
 * example is created through POST /v1/templates as Meta's document writes it.
 */
const lowerCaseTypes = (ex: Example) => ex.components.some((c) => c.type !== String(c.type).toUpperCase());

describe("our API's template creation takes Meta's examples where our contract allows the shape", () => {
  let key: string;
  beforeAll(async () => {
    const project = await t.admin.project('Meta examples');
    key = (await t.admin.key(project.id, ['templates:manage', 'templates:read'])).secret;
  });
  /** A handle from POST /v1/templates/header-sample, as our contract asks. */
  const sample = async (format: string) => {
    const { mime, bytes, file } = MIME[format];
    const res = await request(t.app).post('/v1/templates/header-sample').set('Authorization', `Bearer ${key}`).send({ format, data: S.b64(bytes()), filename: file, mime });
    expect(res.status).toBe(201);
    return res.body.data.handle as string;
  };

  it.each(ALL.map(([title, ex], i) => [title, ex, i] as const))('When Meta\'s example "%s" is posted to POST /v1/templates, then it is created as given (or 400 invalid_request for component types in lower case)', async (_title, ex, i) => {
    const body = await filled(ex, `api_example_${i}`, sample);
    const res = await request(t.app).post('/v1/templates').set('Authorization', `Bearer ${key}`).send(body);
    if (lowerCaseTypes(ex)) {
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      return;
    }
    expect(res.body.error).toBeUndefined();
    expect(res.status).toBe(201);
    expect(res.body.data.template).toMatchObject({ name: body.name, category: ex.category, status: 'PENDING', components: body.components });
  });
});
