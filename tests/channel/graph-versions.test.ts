/**
 * The Graph API version (issue 56, item 1): v26.0 by default; the end dates of Meta's versions the
 * service knows (the same table as the simulator's); /readyz stays ready but reports a version
 * ending within 90 days, and the log warns once a day (the manual clock, never a sleep); the
 * simulator refuses a version Meta has ended with Meta's error, and serves v26.0.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import winston from 'winston';
import { ManualClock } from '../../lib/platform/clock.js';
import { loadConfig } from '../../lib/platform/config.js';
import { CloudApiClient } from '../../channel/cloud-api.js';
import { ChannelError } from '../../channel/errors.js';
import { DEFAULT_GRAPH_VERSION, GRAPH_VERSIONS, graphVersionEndsAt, graphVersionReport } from '../../channel/graph-versions.js';
import { SIM_LATEST_VERSION, SIM_VERSION_ENDS, versionState } from '../../simulator/versions.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { channelSecretPlace } from '../../lib/channel-settings/settings.js';
import { shippedContract } from '../support/contracts.js';
import { Ajv2020 } from 'ajv/dist/2020.js';

function captureLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new PassThrough();
  stream.on('data', (c: Buffer) => c.toString('utf8').split('\n').filter(Boolean).forEach((l) => lines.push(JSON.parse(l))));
  const logger = winston.createLogger({ level: 'debug', format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] });
  return { logger, lines };
}
const flush = () => new Promise((r) => setImmediate(r));

describe('Graph API versions: the table', () => {
  it('defaults to v26.0, the latest, in the configuration and the simulator', () => {
    expect(DEFAULT_GRAPH_VERSION).toBe('v26.0');
    expect(loadConfig({}).graphApiVersion).toBe('v26.0');
    expect(SIM_LATEST_VERSION).toBe('v26.0');
  });

  it("the service's end dates are the simulator's (Meta's changelog, as the research note gives them)", () => {
    expect(GRAPH_VERSIONS.map((v) => [v.version, v.ends ?? null])).toEqual(SIM_VERSION_ENDS.map(([v, e]) => [v, e]));
    const ends = Object.fromEntries(GRAPH_VERSIONS.map((v) => [v.version, v.ends]));
    expect(ends).toMatchObject({ 'v20.0': '2026-09-24', 'v21.0': '2027-01-21', 'v22.0': '2027-05-20', 'v25.0': '2028-07' });
    expect(GRAPH_VERSIONS.find((v) => v.version === 'v26.0')).toEqual({ version: 'v26.0', released: '2026-07-29' });
    // Served through the last day; a month counts from its first day.
    expect(graphVersionEndsAt({ version: 'v21.0', ends: '2027-01-21' })!.toISOString()).toBe('2027-01-22T00:00:00.000Z');
    expect(graphVersionEndsAt({ version: 'v25.0', ends: '2028-07' })!.toISOString()).toBe('2028-07-01T00:00:00.000Z');
  });

  it('reports days left, ending soon within 90 days, ended, and unknown versions', () => {
    const at = (iso: string) => new Date(iso);
    expect(graphVersionReport('v21.0', at('2026-11-25T19:00:00Z'))).toEqual({ version: 'v21.0', status: 'ending_soon', ends: '2027-01-21', days_left: 57, latest: 'v26.0' });
    expect(graphVersionReport('v21.0', at('2026-10-20T12:00:00Z'))).toMatchObject({ status: 'supported', days_left: 93 });
    expect(graphVersionReport('v21.0', at('2027-01-21T23:59:59Z'))).toMatchObject({ status: 'ending_soon', days_left: 0 });
    expect(graphVersionReport('v21.0', at('2027-01-22T00:00:00Z'))).toMatchObject({ status: 'ended' });
    expect(graphVersionReport('v20.0', at('2026-11-25T00:00:00Z'))).toMatchObject({ status: 'ended', ends: '2026-09-24' });
    expect(graphVersionReport('v19.0', at('2026-11-25T00:00:00Z'))).toMatchObject({ status: 'ended', ends: null });
    expect(graphVersionReport('v26.0', at('2026-11-25T00:00:00Z'))).toEqual({ version: 'v26.0', status: 'supported', ends: null, days_left: null, latest: 'v26.0' });
    expect(graphVersionReport('v27.0', at('2026-11-25T00:00:00Z'))).toMatchObject({ status: 'unknown' });
    expect(versionState('v20.0', at('2026-09-24T23:00:00Z'))).toBe('served');
    expect(versionState('v20.0', at('2026-09-25T00:00:00Z'))).toBe('retired');
    expect(versionState('v27.0', at('2026-11-25T00:00:00Z'))).toBe('unreleased');
  });
});

describe('Graph API versions: readiness, the daily warning, the simulator', () => {
  let t: TestApp;
  const clock = new ManualClock(new Date('2026-10-20T12:00:00Z'));
  const log = captureLogger();
  const warnings = () => log.lines.filter((l) => l.level === 'warn' && /^Graph API v21\.0/.test(String(l.message)));
  beforeAll(async () => {
    t = await startTestApp({ simulator: true, webhooks: true, clock, logger: log.logger, config: { graphApiVersion: 'v21.0' } });
  }, 60_000);
  afterAll(async () => t?.close());

  it('/readyz stays ready and reports v21.0 ending within 90 days; the log warns once a day', async () => {
    const validate = new Ajv2020({ strict: false, allErrors: true }).addSchema(shippedContract('admin').document as object, 'admin')
      .compile({ $ref: 'admin#/components/schemas/Readiness' });
    // 93 days before the end: supported, no warning.
    let res = await request(t.app).get('/readyz').expect(200);
    expect(validate(res.body.data)).toBe(true);
    expect(res.body.data.graph_api).toEqual({ version: 'v21.0', status: 'supported', ends: '2027-01-21', days_left: 93, latest: 'v26.0', warning: null });
    await flush();
    expect(warnings()).toHaveLength(0);

    // 89 days before: ready still, the report and one warning.
    clock.set(new Date('2026-10-25T08:00:00Z'));
    res = await request(t.app).get('/readyz').expect(200);
    expect(validate(res.body.data)).toBe(true);
    expect(res.body.data.ready).toBe(true);
    expect(res.body.data.graph_api).toMatchObject({ version: 'v21.0', status: 'ending_soon', ends: '2027-01-21', days_left: 88 });
    expect(res.body.data.graph_api.warning).toBe('Graph API v21.0 ends 2027-01-21 (88 days left): set GRAPH_API_VERSION=v26.0 (docs/configuration.md, "Moving the Graph API version").');
    await request(t.app).get('/readyz').expect(200);
    clock.advance(23 * 3_600_000);
    await request(t.app).get('/readyz').expect(200);
    await flush();
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({ graph_api: { status: 'ending_soon', days_left: 88 } });
    // A day after the first warning: the next one.
    clock.advance(3_600_000);
    await request(t.app).get('/readyz').expect(200);
    await flush();
    expect(warnings()).toHaveLength(2);
  });

  it('a send on v21.0 works until its end; from 22 January 2027 the simulator refuses it with Meta\'s error, and v26.0 sends', async () => {
    const project = await t.admin.project('Versions');
    const key = (await t.admin.key(project.id, ['messages:send'])).secret;
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
    const phone = '15550009876';
    clock.set(new Date('2027-01-21T20:00:00Z'));
    await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: channel.phoneNumberId, from: phone, name: 'Ada', text: 'hi' }).expect(200);
    const before = await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone, content: 'on the last day' });
    expect(before.status).toBe(200);

    clock.set(new Date('2027-01-22T00:00:01Z'));
    const ready = await request(t.app).get('/readyz').expect(200);
    expect(ready.body.data.graph_api).toMatchObject({ status: 'ended', warning: 'Graph API v21.0 has ended (2027-01-21): Meta refuses it; set GRAPH_API_VERSION=v26.0.' });
    const after = await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone, content: 'a day late' });
    expect(after.status).toBe(502);
    expect(after.body).toMatchObject({ success: false, error: { code: 'upstream_error' } });
    expect(after.body.error.message).toMatch(/deprecated version of the Graph API.*v26\.0/);

    // Meta's answer on the wire; the client the service uses on v26.0 sends.
    const token = t.secretBox.open(channel.accessTokenEnc, channelSecretPlace(channel.projectId, 'access_token'));
    const raw = await request(t.sim!.url).post(`/v21.0/${channel.phoneNumberId}/messages`).set('Authorization', `Bearer ${token}`)
      .send({ messaging_product: 'whatsapp', to: phone, type: 'text', text: { body: 'x' } }).expect(400);
    expect(raw.body).toEqual({ error: { message: '(#2635) You are calling a deprecated version of the Graph API. Please update to the latest version: v26.0.', type: 'OAuthException', code: 2635, fbtrace_id: expect.any(String) } });
    const v20 = await request(t.sim!.url).get(`/v20.0/${channel.phoneNumberId}`).expect(400);
    expect(v20.body.error.code).toBe(2635);
    expect((await request(t.sim!.url).get(`/v27.0/${channel.phoneNumberId}`).expect(400)).body.error.code).toBe(2500);

    const creds = { phoneNumberId: channel.phoneNumberId, wabaId: channel.wabaId, appId: channel.appId, accessToken: token };
    const text = { recipient: { kind: 'customer' as const, phone }, content: { type: 'text' as const, text: { body: 'on v26.0' } } };
    const v26 = new CloudApiClient({ baseUrl: t.sim!.url, version: 'v26.0', timeoutMs: 5000 });
    const old = new CloudApiClient({ baseUrl: t.sim!.url, version: 'v21.0', timeoutMs: 5000 });
    try {
      const sent = await v26.sendMessage(creds, text);
      expect(sent.channelMessageId).toMatch(/^wamid\./);
      const refused = await old.sendMessage(creds, text).then(() => null, (e: unknown) => e);
      expect(refused).toBeInstanceOf(ChannelError);
      expect(refused).toMatchObject({ kind: 'rejected', retryable: false, code: 2635, httpStatus: 400 });
    } finally {
      v26.close();
      old.close();
    }
  });
});
