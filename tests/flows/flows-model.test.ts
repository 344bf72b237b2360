/**
 * The language-model flow generator against a local fake of an OpenAI-compatible endpoint: a
 * valid answer, an invalid answer corrected on the retry (which carries the findings), invalid
 * twice, garbage, a timeout and an HTTP error. Failures are 502 flow_generation_failed /
 * flow_update_failed with findings in details, and nothing is stored.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';

type Answer = { status?: number; content?: string; raw?: string; hang?: boolean };

const validFlow = (title = 'Sign up') => ({
  version: '7.3',
  screens: [
    {
      id: 'SIGN_UP',
      title,
      terminal: true,
      layout: {
        type: 'SingleColumnLayout',
        children: [
          { type: 'TextInput', name: 'email', label: 'Email', 'input-type': 'email' },
          { type: 'Footer', label: 'Join', 'on-click-action': { name: 'complete', payload: { email: '${form.email}' } } },
        ],
      },
    },
  ],
});
const invalidFlow = () => {
  const f = validFlow();
  f.screens[0].id = 'SIGN_UP_1';
  return f;
};

let answers: Answer[] = [];
const calls: { body: any; auth: string | undefined }[] = [];
const hanging = new Set<http.ServerResponse>();
const fake = http.createServer((req, res) => {
  let data = '';
  req.on('data', (c) => (data += c));
  req.on('end', () => {
    calls.push({ body: JSON.parse(data), auth: req.headers.authorization });
    const a = answers.shift() ?? { status: 500 };
    if (a.hang) {
      hanging.add(res);
      return;
    }
    res.writeHead(a.status ?? 200, { 'content-type': 'application/json' });
    res.end(a.raw ?? JSON.stringify({ id: 'cmpl-1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: a.content ?? '' }, finish_reason: 'stop' }] }));
  });
});
const say = (v: unknown): Answer => ({ content: typeof v === 'string' ? v : JSON.stringify(v) });

let t: TestApp;
let key: string;
beforeAll(async () => {
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`;
  t = await startTestApp({ config: { flowModelUrl: url, flowModelName: 'test-model', flowModelApiKey: 'sk-test', flowModelTimeoutMs: 300 } });
  const project = await t.admin.project();
  key = (await t.admin.key(project.id, ['flows:read', 'flows:write'])).secret;
});
afterAll(async () => {
  for (const r of hanging) r.destroy();
  await t.close();
  await new Promise<void>((r) => fake.close(() => r()));
});
beforeEach(() => {
  answers = [];
  calls.length = 0;
});

const auth = () => ({ Authorization: `Bearer ${key}` });
const generate = (name: string, prompt = 'A sign-up form asking for an email') => request(t.app).post('/v1/flows/generate').set(auth()).send({ name, prompt });
const exists = async (name: string) => (await request(t.app).get(`/v1/flows/${name}`).set(auth())).status === 200;

describe('generateFlow with the model generator', () => {
  it('When the model answers a valid flow (in a code fence), then it is stored as DRAFT from model_generate', async () => {
    answers = [say('Here it is:\n```json\n' + JSON.stringify(validFlow()) + '\n```')];
    const res = await generate('signup');
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ generator: 'model', attempts: 1 });
    expect(res.body.data.flow).toMatchObject({ status: 'DRAFT', version: { number: 1, source: 'model_generate' } });
    expect(calls[0].auth).toBe('Bearer sk-test');
    expect(calls[0].body.model).toBe('test-model');
    expect(calls[0].body.messages.at(-1).content).toContain('A sign-up form asking for an email');
  });

  it('When the first answer is invalid, then the model is asked once more with the findings and the corrected flow is stored', async () => {
    answers = [say(invalidFlow()), say(validFlow())];
    const res = await generate('signup_retry');
    expect(res.status).toBe(201);
    expect(res.body.data.attempts).toBe(2);
    expect(calls).toHaveLength(2);
    const retry = calls[1].body.messages.at(-1).content as string;
    expect(retry).toContain('INVALID_SCREEN_ID');
    expect(retry).toContain('/screens/0/id');
  });

  it('When both answers are invalid, then 502 flow_generation_failed with the findings, and nothing is stored', async () => {
    answers = [say(invalidFlow()), say(invalidFlow())];
    const res = await generate('signup_bad');
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('flow_generation_failed');
    expect(res.body.error.details).toMatchObject({ reason: 'invalid_flow', attempts: 2 });
    expect(res.body.error.details.findings[0]).toMatchObject({ error: 'INVALID_SCREEN_ID', error_type: 'FLOW_JSON_ERROR', severity: 'error', pointer: '/screens/0/id' });
    expect(await exists('signup_bad')).toBe(false);
  });

  it('When the model answers garbage twice, then 502 with an INVALID_JSON finding', async () => {
    answers = [say('I cannot help with that.'), say('{"version": "7.3", "screens": [')];
    const res = await generate('signup_garbage');
    expect(res.status).toBe(502);
    expect(res.body.error.details.findings[0].error).toBe('INVALID_JSON');
    expect(await exists('signup_garbage')).toBe(false);
  });

  it('When the model does not answer in time, then 502 with reason timeout after one call', async () => {
    answers = [{ hang: true }];
    const res = await generate('signup_slow');
    expect(res.status).toBe(502);
    expect(res.body.error).toMatchObject({ code: 'flow_generation_failed', details: { reason: 'timeout', findings: [] } });
    expect(calls).toHaveLength(1);
    expect(await exists('signup_slow')).toBe(false);
  });

  it('When the endpoint answers HTTP 500 or a body that is no completion, then 502 with reason bad_response', async () => {
    answers = [{ status: 500, raw: 'oops' }];
    const a = await generate('signup_500');
    expect(a.status).toBe(502);
    expect(a.body.error.details.reason).toBe('bad_response');
    answers = [{ raw: '<html>proxy</html>' }];
    const b = await generate('signup_html');
    expect(b.status).toBe(502);
    expect(b.body.error.details.reason).toBe('bad_response');
  });

  it('When the endpoint is unreachable, then 502 with reason unreachable', async () => {
    const before = t.config.flowModelUrl;
    t.config.flowModelUrl = 'http://127.0.0.1:9/v1';
    try {
      const res = await generate('signup_down');
      expect(res.status).toBe(502);
      expect(res.body.error.details.reason).toBe('unreachable');
    } finally {
      t.config.flowModelUrl = before;
    }
  });
});

describe('updateFlow with an instruction', () => {
  it('When a change is described in words, then the model gets the current definition and its result is version 2', async () => {
    answers = [say(validFlow())];
    const created = await generate('editable');
    expect(created.status).toBe(201);
    answers = [say(validFlow('Join us'))];
    const res = await request(t.app).put('/v1/flows/editable').set(auth()).set('If-Match', created.headers.etag).send({ instruction: 'Rename the screen to Join us' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ generator: 'model', attempts: 1, flow: { version: { number: 2, source: 'model_update' } } });
    expect(res.body.data.flow.definition.screens[0].title).toBe('Join us');
    const prompt = calls[1].body.messages.at(-1).content as string;
    expect(prompt).toContain('"SIGN_UP"');
    expect(prompt).toContain('Rename the screen to Join us');
  });

  it('When the model cannot produce a valid change, then 502 flow_update_failed with findings, and the flow is unchanged', async () => {
    answers = [say(invalidFlow()), say('nonsense')];
    const res = await request(t.app).put('/v1/flows/editable').set(auth()).send({ instruction: 'Break it' });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('flow_update_failed');
    expect(res.body.error.details.findings[0].error).toBe('INVALID_JSON');
    const cur = await request(t.app).get('/v1/flows/editable').set(auth());
    expect(cur.body.data.flow.version.number).toBe(2);
  });

  it('When the instruction names a flow that does not exist, then 404 without calling the model', async () => {
    const res = await request(t.app).put('/v1/flows/missing_flow').set(auth()).send({ instruction: 'Add a field' });
    expect(res.status).toBe(404);
    expect(calls).toHaveLength(0);
  });

  it('When the instruction is based on a stale ETag, then 412 precondition_failed without calling the model', async () => {
    const res = await request(t.app).put('/v1/flows/editable').set(auth()).set('If-Match', '"0000"').send({ instruction: 'Add a field' });
    expect(res.status).toBe(412);
    expect(res.body.error.code).toBe('precondition_failed');
    expect(calls).toHaveLength(0);
  });
});
