/**
 * Flows through HTTP: generate from a structured description, list, read, versions, update with
 * ETag/If-Match, the 4xx for plainly invalid input, the definitions as read-only code-tree files,
 * and scopes. The model generator has its own file (flows-model.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { isFlowFilePath, listFlowFiles } from '../../lib/flows/store.js';

let t: TestApp;
let key: string;
let projectId: string;
beforeAll(async () => {
  t = await startTestApp();
  const project = await t.admin.project();
  projectId = project.id;
  key = (await t.admin.key(project.id, ['flows:read', 'flows:write'])).secret;
});
afterAll(async () => {
  await t.close();
});

const auth = (k = key) => ({ Authorization: `Bearer ${k}` });

const survey = {
  screens: [
    {
      title: 'About you',
      text: 'Two quick questions.',
      fields: [
        { name: 'full_name', label: 'Your name', type: 'text', required: true },
        { name: 'email', label: 'Email', type: 'email' },
      ],
    },
    {
      title: 'Your visit',
      fields: [
        { name: 'rating', label: 'How was it?', type: 'single_choice', choices: ['Great', 'Fine', 'Poor'], required: true },
        { name: 'topics', label: 'What did you like?', type: 'multiple_choice', choices: ['Food', 'Staff'] },
        { name: 'visit_day', label: 'When did you come?', type: 'date' },
        { name: 'consent', label: 'You may contact me about my answers', type: 'opt_in' },
      ],
    },
  ],
  final_action: { type: 'complete', label: 'Send' },
};

const generate = (body: object, k = key) => request(t.app).post('/v1/flows/generate').set(auth(k)).send(body);
const put = (name: string, body: object, ifMatch?: string) => {
  const r = request(t.app).put(`/v1/flows/${name}`).set(auth());
  if (ifMatch !== undefined) r.set('If-Match', ifMatch);
  return r.send(body);
};

describe('generateFlow', () => {
  it('When a structured description is sent, then a valid DRAFT flow is stored as version 1 with an ETag', async () => {
    const res = await generate({ name: 'visit_survey', categories: ['SURVEY'], description: survey });
    expect(res.status).toBe(201);
    const flow = res.body.data.flow;
    expect(res.body.data).toMatchObject({ generator: 'deterministic', attempts: 1 });
    expect(flow).toMatchObject({ name: 'visit_survey', categories: ['SURVEY'], status: 'DRAFT', channel_flow_id: null, file: 'flows/visit_survey.json', findings: [] });
    expect(flow.version).toMatchObject({ number: 1, source: 'generate' });
    expect(res.headers.etag).toBe(flow.version.etag);
    expect(flow.version.etag).toBe(`"${flow.version.sha256}"`);
    const def = flow.definition;
    expect(def.version).toBe('7.3');
    expect(def.screens.map((s: { id: string }) => s.id)).toEqual(['ABOUT_YOU', 'YOUR_VISIT']);
    const last = def.screens[1];
    expect(last).toMatchObject({ terminal: true, success: true });
    expect(Object.keys(last.data)).toEqual(['full_name', 'email']);
    const footer = last.layout.children.at(-1);
    expect(footer).toMatchObject({ type: 'Footer', label: 'Send', 'on-click-action': { name: 'complete' } });
    expect(Object.keys(footer['on-click-action'].payload)).toEqual(['full_name', 'email', 'rating', 'topics', 'visit_day', 'consent']);
    expect(def.screens[0].layout.children.at(-1)['on-click-action']).toMatchObject({ name: 'navigate', next: { name: 'YOUR_VISIT' }, payload: { full_name: '${form.full_name}', email: '${form.email}' } });
  });

  it('When the same description is generated under another name, then the definition is byte for byte the same', async () => {
    const res = await generate({ name: 'visit_survey_copy', description: survey });
    expect(res.status).toBe(201);
    const first = await request(t.app).get('/v1/flows/visit_survey').set(auth());
    expect(res.body.data.flow.version.sha256).toBe(first.body.data.flow.version.sha256);
    expect(res.body.data.flow.categories).toEqual(['OTHER']);
  });

  it('When the name is taken, then 409 conflict and nothing changes', async () => {
    const res = await generate({ name: 'visit_survey', description: { screens: [{ title: 'X', fields: [{ name: 'a', label: 'A', type: 'text' }] }] } });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('conflict');
    const v = await request(t.app).get('/v1/flows/visit_survey/versions').set(auth());
    expect(v.body.data.versions).toHaveLength(1);
  });

  it.each([
    ['an empty screen list', { screens: [] }, 'description'],
    ['no field at all', { screens: [{ title: 'Hello' }] }, 'description.screens'],
    ['a choice field without choices', { screens: [{ title: 'Q', fields: [{ name: 'c', label: 'Pick', type: 'single_choice' }] }] }, 'description.screens[0].fields[0].choices'],
    ['choices on a text field', { screens: [{ title: 'Q', fields: [{ name: 'c', label: 'Name', type: 'text', choices: ['a'] }] }] }, 'description.screens[0].fields[0].choices'],
    ['two fields of one name', { screens: [{ title: 'Q', fields: [{ name: 'a', label: 'A', type: 'text' }] }, { title: 'R', fields: [{ name: 'a', label: 'B', type: 'email' }] }] }, 'description.screens[1].fields[0].name'],
    ['a label too long for a text input', { screens: [{ title: 'Q', fields: [{ name: 'a', label: 'What is your full legal name?', type: 'text' }] }] }, 'description.screens[0].fields[0].label'],
    ['21 radio choices', { screens: [{ title: 'Q', fields: [{ name: 'a', label: 'Pick', type: 'single_choice', choices: Array.from({ length: 21 }, (_, i) => `Choice ${i}`) }] }] }, 'description.screens[0].fields[0].choices'],
    ['repeated choices', { screens: [{ title: 'Q', fields: [{ name: 'a', label: 'Pick', type: 'dropdown', choices: ['Yes', 'yes'] }] }] }, 'description.screens[0].fields[0].choices[1]'],
    ['the reserved screen id', { screens: [{ id: 'SUCCESS', title: 'Q', fields: [{ name: 'a', label: 'A', type: 'text' }] }] }, 'description.screens[0].id'],
  ])('When the description has %s, then 400 invalid_request names the field and nothing is stored', async (_what, description, field) => {
    const res = await generate({ name: 'contradictory', description });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(JSON.stringify(res.body.error.details)).toContain(field);
    expect((await request(t.app).get('/v1/flows/contradictory').set(auth())).status).toBe(404);
  });

  it.each([
    ['neither description nor prompt', { name: 'nothing' }],
    ['both description and prompt', { name: 'both', description: survey, prompt: 'a survey' }],
    ['a frozen version', { name: 'old', version: '3.1', description: survey }],
    ['a bad name', { name: 'Has Spaces', description: survey }],
    ['the reserved name', { name: 'generate', description: survey }],
  ])('When the request has %s, then 400 invalid_request', async (_what, body) => {
    const res = await generate(body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
  });

  it('When a prompt is sent and no model is configured, then 400 invalid_request says so', async () => {
    const res = await generate({ name: 'by_words', prompt: 'A sign-up form with name and email' });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/FLOW_MODEL_URL/);
  });
});

describe('listFlows, getFlow, listFlowVersions', () => {
  it('When flows exist, then the list gives name, status, version and hash, paged by name', async () => {
    const p1 = await request(t.app).get('/v1/flows?limit=1').set(auth());
    expect(p1.status).toBe(200);
    expect(p1.body.data.flows).toHaveLength(1);
    expect(p1.body.data.flows[0].name).toBe('visit_survey');
    expect(p1.body.data.flows[0].definition).toBeUndefined();
    const p2 = await request(t.app).get(`/v1/flows?limit=1&cursor=${encodeURIComponent(p1.body.data.nextCursor)}`).set(auth());
    expect(p2.body.data.flows[0].name).toBe('visit_survey_copy');
    const drafts = await request(t.app).get('/v1/flows?status=PUBLISHED').set(auth());
    expect(drafts.body.data.flows).toEqual([]);
    const bad = await request(t.app).get('/v1/flows?cursor=garbage').set(auth());
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_cursor');
  });

  it('When an unknown flow or version is read, then 404 not_found', async () => {
    expect((await request(t.app).get('/v1/flows/nope').set(auth())).status).toBe(404);
    const v = await request(t.app).get('/v1/flows/visit_survey?version=9').set(auth());
    expect(v.status).toBe(404);
    expect(v.body.error.code).toBe('not_found');
  });
});

describe('updateFlow', () => {
  it('When a new definition is put with the current ETag, then it is version 2 and version 1 stays readable', async () => {
    const cur = await request(t.app).get('/v1/flows/visit_survey').set(auth());
    const etag1 = cur.headers.etag;
    const def = cur.body.data.flow.definition;
    def.screens[0].title = 'About you (2)';
    const res = await put('visit_survey', { definition: def }, etag1);
    expect(res.status).toBe(200);
    expect(res.body.data.flow.version).toMatchObject({ number: 2, source: 'update' });
    expect(res.headers.etag).not.toBe(etag1);
    const v1 = await request(t.app).get('/v1/flows/visit_survey?version=1').set(auth());
    expect(v1.body.data.flow.definition.screens[0].title).toBe('About you');
    expect(v1.headers.etag).toBe(etag1);
    const versions = await request(t.app).get('/v1/flows/visit_survey/versions').set(auth());
    expect(versions.body.data.versions.map((v: { number: number }) => v.number)).toEqual([2, 1]);

    // A writer still holding version 1's ETag is refused, with the current one.
    const stale = await put('visit_survey', { definition: { ...def, screens: def.screens } }, etag1);
    expect(stale.status).toBe(412);
    expect(stale.body.error.code).toBe('precondition_failed');
    expect(stale.body.error.details.current_etag).toBe(res.headers.etag);
    expect(stale.headers.etag).toBe(res.headers.etag);
  });

  it('When two writers put different changes on the same ETag at once, then one wins and the other gets 412', async () => {
    const cur = await request(t.app).get('/v1/flows/visit_survey').set(auth());
    const etag = cur.headers.etag;
    const a = structuredClone(cur.body.data.flow.definition);
    const b = structuredClone(cur.body.data.flow.definition);
    a.screens[0].title = 'Writer A';
    b.screens[0].title = 'Writer B';
    const [ra, rb] = await Promise.all([put('visit_survey', { definition: a }, etag), put('visit_survey', { definition: b }, etag)]);
    expect([ra.status, rb.status].sort()).toEqual([200, 412]);
    const after = await request(t.app).get('/v1/flows/visit_survey').set(auth());
    expect(after.body.data.flow.version.number).toBe(cur.body.data.flow.version.number + 1);
    const winner = ra.status === 200 ? 'Writer A' : 'Writer B';
    expect(after.body.data.flow.definition.screens[0].title).toBe(winner);
  });

  it('When the same definition is put again, then no version is written', async () => {
    const cur = await request(t.app).get('/v1/flows/visit_survey').set(auth());
    const res = await put('visit_survey', { definition: cur.body.data.flow.definition });
    expect(res.status).toBe(200);
    expect(res.body.data.unchanged).toBe(true);
    expect(res.body.data.flow.version.number).toBe(cur.body.data.flow.version.number);
  });

  it('When the definition has errors, then 400 invalid_flow with findings in Meta shape, and nothing is stored', async () => {
    const cur = await request(t.app).get('/v1/flows/visit_survey').set(auth());
    const def = cur.body.data.flow.definition;
    def.screens[1].id = 'SCREEN_2';
    def.screens[0].layout.children[0].text = 'x'.repeat(5000);
    const res = await put('visit_survey', { definition: def });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_flow');
    const errors = res.body.error.details.findings.map((f: { error: string }) => f.error);
    expect(errors).toEqual(expect.arrayContaining(['INVALID_SCREEN_ID', 'TEXT_TOO_LONG', 'UNKNOWN_SCREEN']));
    const f = res.body.error.details.findings.find((x: { error: string }) => x.error === 'TEXT_TOO_LONG');
    expect(f).toMatchObject({ error_type: 'FLOW_JSON_ERROR', severity: 'error', pointer: '/screens/0/layout/children/0/text' });
    expect(f.line_start).toBeGreaterThan(1);
    const after = await request(t.app).get('/v1/flows/visit_survey').set(auth());
    expect(after.body.data.flow.version.number).toBe(cur.body.data.flow.version.number);
  });

  it.each([
    ['text that is not JSON', '{"version": "7.3", "screens": [', 'INVALID_JSON'],
    ['an unknown version', JSON.stringify({ version: '9.9', screens: [{ id: 'A', terminal: true, layout: { type: 'SingleColumnLayout', children: [{ type: 'Footer', label: 'Go', 'on-click-action': { name: 'complete', payload: {} } }] } }] }), 'UNSUPPORTED_VERSION'],
    ['an unknown component', JSON.stringify({ version: '7.3', screens: [{ id: 'A', terminal: true, layout: { type: 'SingleColumnLayout', children: [{ type: 'Carousel' }, { type: 'Footer', label: 'Go', 'on-click-action': { name: 'complete', payload: {} } }] } }] }), 'UNKNOWN_COMPONENT'],
    ['no screens', JSON.stringify({ version: '7.3', screens: [] }), 'INVALID_PROPERTY_TYPE'],
  ])('When the definition is %s, then 400 invalid_flow names it', async (_what, text, error) => {
    const res = await put('hand_written', { definition: text });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_flow');
    expect(res.body.error.details.findings[0].error).toBe(error);
    expect((await request(t.app).get('/v1/flows/hand_written').set(auth())).status).toBe(404);
  });

  it('When the definition is over 10 MB, then 400 invalid_flow FLOW_JSON_TOO_LARGE; a body over the request limit is 413', async () => {
    const gen = await request(t.app).get('/v1/flows/visit_survey_copy').set(auth());
    const def = gen.body.data.flow.definition;
    def.screens[0].layout.children.splice(0, 0, ...Array.from({ length: 3 }, () => ({ type: 'TextBody', text: 'x'.repeat(3_600_000) })));
    const big = await put('too_big', { definition: def });
    expect(big.status).toBe(400);
    expect(big.body.error.code).toBe('invalid_flow');
    expect(big.body.error.details.findings[0]).toMatchObject({ error: 'FLOW_JSON_TOO_LARGE', severity: 'error' });
    const huge = await put('too_big', { definition: 'x'.repeat(12 * 1024 * 1024) });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('payload_too_large');
    expect((await request(t.app).get('/v1/flows/too_big').set(auth())).status).toBe(404);
  });

  it('When a flow that does not exist is put, then it is created as version 1 (201); If-Match on it is 412', async () => {
    const gen = await request(t.app).get('/v1/flows/visit_survey_copy').set(auth());
    const refused = await put('hand_written', { definition: gen.body.data.flow.definition }, '"abc"');
    expect(refused.status).toBe(412);
    expect(refused.body.error.details.current_etag).toBeNull();
    const res = await put('hand_written', { definition: JSON.stringify(gen.body.data.flow.definition), categories: ['CONTACT_US'] });
    expect(res.status).toBe(201);
    expect(res.body.data.flow).toMatchObject({ name: 'hand_written', status: 'DRAFT', categories: ['CONTACT_US'], version: { number: 1 } });
  });

  it('When a definition has only warnings, then it is stored with them', async () => {
    const gen = await request(t.app).get('/v1/flows/visit_survey_copy').set(auth());
    const def = gen.body.data.flow.definition;
    def.screens.push({ id: 'ORPHAN', terminal: true, layout: { type: 'SingleColumnLayout', children: [{ type: 'Footer', label: 'Bye', 'on-click-action': { name: 'complete', payload: {} } }] } });
    const res = await put('visit_survey_copy', { definition: def });
    expect(res.status).toBe(200);
    expect(res.body.data.flow.findings).toEqual([expect.objectContaining({ error: 'UNREACHABLE_SCREEN', severity: 'warning', pointer: '/screens/2' })]);
  });

  it('When both or neither of definition and instruction are sent, or an instruction without a model, then 400 invalid_request', async () => {
    for (const body of [{}, { definition: {}, instruction: 'x' }, { instruction: 'Add a phone field' }]) {
      const res = await put('visit_survey', body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
  });
});

describe('flows as code-tree files', () => {
  it('When flows exist, then listFlowFiles gives flows/<name>.json with the current definition; production has only published ones', async () => {
    const files = await listFlowFiles(t.db, projectId, 'development');
    expect(files.map((f) => f.path)).toEqual(['flows/hand_written.json', 'flows/visit_survey.json', 'flows/visit_survey_copy.json']);
    const cur = await request(t.app).get('/v1/flows/visit_survey').set(auth());
    expect(JSON.parse(files[1].content)).toEqual(cur.body.data.flow.definition);
    expect(await listFlowFiles(t.db, projectId, 'production')).toEqual([]);
    expect(isFlowFilePath('flows/visit_survey.json')).toBe(true);
    expect(isFlowFilePath('src/flows.ts')).toBe(false);
  });
});

describe('scopes', () => {
  it('When a key holds only flows:read, then it reads but cannot generate or update (403 insufficient_scope)', async () => {
    const reader = (await t.admin.key(projectId, ['flows:read'])).secret;
    expect((await request(t.app).get('/v1/flows').set(auth(reader))).status).toBe(200);
    const g = await generate({ name: 'nope', description: survey }, reader);
    expect(g.status).toBe(403);
    expect(g.body.error.code).toBe('insufficient_scope');
    const p = await request(t.app).put('/v1/flows/visit_survey').set(auth(reader)).send({ definition: {} });
    expect(p.status).toBe(403);
    const none = (await t.admin.key(projectId, ['messages:send'])).secret;
    expect((await request(t.app).get('/v1/flows').set(auth(none))).status).toBe(403);
  });
});

describe('flow definitions in the code tree', () => {
  it('When a flow is generated and updated, then GET /v1/files lists flows/<name>.json with the current definition, and PUT /v1/files refuses it', async () => {
    const codeKey = (await t.admin.key(projectId, ['flows:read', 'flows:write', 'code:read', 'code:write'])).secret;
    const made = await generate({ name: 'tree_mirror', categories: ['SURVEY'], description: survey }, codeKey);
    expect(made.status).toBe(201);
    const listed = await request(t.app).get('/v1/files').set(auth(codeKey)).expect(200);
    expect(listed.body.data.files.map((f: { path: string }) => f.path)).toContain('flows/tree_mirror.json');
    const file = await request(t.app).get('/v1/files/flows/tree_mirror.json').set(auth(codeKey)).expect(200);
    const stored = await request(t.app).get('/v1/flows/tree_mirror').set(auth(codeKey)).expect(200);
    expect(JSON.parse(file.body.data.file.content)).toEqual(stored.body.data.flow.definition);
    const refused = await request(t.app).put('/v1/files/flows/tree_mirror.json').set(auth(codeKey)).send({ content: '{}' });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('flow_file_forbidden');
    const again = await request(t.app).get('/v1/files/flows/tree_mirror.json').set(auth(codeKey)).expect(200);
    expect(again.body.data.file.content).toBe(file.body.data.file.content);
  });
});
