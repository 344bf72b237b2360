/**
 * Output for people: aligned tables for lists, `label: value` lines for one record, and a block
 * that makes a one-time secret hard to miss. Machine output (`--json`) does not pass through here.
 */
import type { Schemas } from './client.js';

type Cell = string | number | boolean | null | undefined;

const text = (v: Cell) => (v === null || v === undefined || v === '' ? '-' : String(v));
/** ISO timestamps without milliseconds, still UTC and still sortable. */
export const when = (iso: string | null | undefined) => (iso ? iso.replace(/\.\d{3}Z$/, 'Z') : '-');
/** `2026-11-24 00:00 UTC`: the dashboard's and the held campaign's format. */
export const utcMinute = (iso: string | null | undefined) => (iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : '-');

/** Columns padded to their widest cell; the last column is not padded. */
export function table(headers: string[], rows: Cell[][], empty: string): string {
  if (rows.length === 0) return empty;
  const cells = [headers, ...rows.map((r) => r.map(text))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

/** `label: value` lines with the values aligned. */
export function record(pairs: Array<[string, Cell]>): string {
  const width = Math.max(...pairs.map(([k]) => k.length)) + 1;
  return pairs.map(([k, v]) => `${(k + ':').padEnd(width)} ${text(v)}`).join('\n');
}

/**
 * The secret, the warning that it is shown once, a line to paste into a shell and what follows it:
 * by default one to try the secret on /v1/ping.
 */
export function secretBlock(
  secret: string,
  envName: string,
  baseUrl: string,
  after = [`curl -s -H "Authorization: Bearer $${envName}" ${baseUrl}/v1/ping`],
): string {
  return [
    '',
    '  Secret (shown only once; it cannot be retrieved again, store it now):',
    '',
    `    ${secret}`,
    '',
    '  Ready to paste:',
    '',
    `    export ${envName}=${secret}`,
    ...after.map((line) => `    ${line}`),
    '',
  ].join('\n');
}

/** `s` itself, or cut to `max` characters ending in `…`. */
const clip = (s: string, max: number) => (s.length <= max ? s : s.slice(0, max - 1) + '…');

/** Each line clipped to `width`, and whether any had to be. */
function fit(text: string, width: number): { text: string; cut: boolean } {
  const lines = text.split('\n');
  return { text: lines.map((l) => clip(l, width)).join('\n'), cut: lines.some((l) => l.length > width) };
}

export const projectRecord = (p: Schemas['AdminProject']) =>
  record([
    ['id', p.id],
    ['name', p.name],
    ['status', p.status],
    ['daily quota', p.daily_send_quota],
    ['kept for conversations', p.conversation_reserve],
    ['created', when(p.created_at)],
    ['updated', when(p.updated_at)],
  ]);

export const projectTable = (ps: Schemas['AdminProject'][]) =>
  table(
    ['ID', 'NAME', 'STATUS', 'DAILY QUOTA', 'CREATED'],
    ps.map((p) => [p.id, p.name, p.status, p.daily_send_quota, when(p.created_at)]),
    'No projects yet. Create one with: npm run ops -- projects create <name>',
  );

const keyStatus = (k: Schemas['ApiKey']) => (k.revoked_at ? 'revoked' : 'active');

export const keyRecord = (k: Schemas['ApiKey']) =>
  record([
    ['id', k.id],
    ['project', k.project_id],
    ['name', k.name],
    ['mode', k.mode],
    ['status', keyStatus(k)],
    ['hint', k.hint],
    ['scopes', k.scopes.join(', ')],
    ['created', when(k.created_at)],
    ['rotated', when(k.rotated_at)],
    ['revoked', when(k.revoked_at)],
  ]);

export const keyTable = (ks: Schemas['ApiKey'][]) =>
  table(
    ['ID', 'NAME', 'MODE', 'STATUS', 'HINT', 'SCOPES', 'CREATED'],
    ks.map((k) => [k.id, k.name, k.mode, keyStatus(k), k.hint, k.scopes.join(','), when(k.created_at)]),
    'No keys in this project.',
  );

const attachedList = (c: Schemas['Connection']) =>
  c.projects.map((p) => (p.is_default ? `${p.project_id} (default)` : p.project_id)).join(', ');

export const connectionRecord = (c: Schemas['Connection']) =>
  [
    record([
      ['id', c.id],
      ['name', c.name],
      ['created', when(c.created_at)],
    ]),
    '',
    table(
      ['PROJECT', 'DEFAULT', 'SCOPES'],
      c.projects.map((p) => [p.project_id, p.is_default ? 'yes' : '', p.scopes.join(',')]),
      'No projects attached. Attach one with: npm run ops -- connections attach <connectionId> <projectId> --scopes a,b',
    ),
  ].join('\n');

export const connectionTable = (cs: Schemas['Connection'][]) =>
  table(
    ['ID', 'NAME', 'CREATED', 'PROJECTS'],
    cs.map((c) => [c.id, c.name, when(c.created_at), attachedList(c)]),
    'No connections yet. Create one with: npm run ops -- connections create <name>',
  );

/** Revoked wins over expired; expiry is judged by this machine's clock. */
const tokenStatus = (t: Schemas['AccessToken'], now: Date) =>
  t.revoked_at ? 'revoked' : Date.parse(t.expires_at) <= now.getTime() ? 'expired' : 'active';

export const tokenRecord = (t: Schemas['AccessToken'], now = new Date()) =>
  record([
    ['id', t.id],
    ['connection', t.connection_id],
    ['status', tokenStatus(t, now)],
    ['hint', t.hint],
    ['expires', when(t.expires_at)],
    ['created', when(t.created_at)],
    ['revoked', when(t.revoked_at)],
  ]);

export const tokenTable = (ts: Schemas['AccessToken'][], now = new Date()) =>
  table(
    ['ID', 'STATUS', 'HINT', 'EXPIRES', 'CREATED'],
    ts.map((t) => [t.id, tokenStatus(t, now), t.hint, when(t.expires_at), when(t.created_at)]),
    'No tokens for this connection. Issue one with: npm run ops -- tokens issue <connectionId>',
  );

const runtimeTokenStatus = (t: Schemas['RuntimeToken']) => (t.revoked_at ? 'revoked' : 'active');

export const runtimeTokenRecord = (t: Schemas['RuntimeToken']) =>
  record([
    ['id', t.id],
    ['project', t.project_id],
    ['status', runtimeTokenStatus(t)],
    ['hint', t.hint],
    ['created', when(t.created_at)],
    ['revoked', when(t.revoked_at)],
  ]);

export const runtimeTokenTable = (ts: Schemas['RuntimeToken'][]) =>
  table(
    ['ID', 'STATUS', 'HINT', 'CREATED', 'REVOKED'],
    ts.map((t) => [t.id, runtimeTokenStatus(t), t.hint, when(t.created_at), when(t.revoked_at)]),
    'No runtime tokens in this project. Create one with: npm run ops -- runtime create <projectId>',
  );

/** Output width the deliveries view keeps to; --json has everything. */
const DELIVERIES_WIDTH = 120;
/** Custom event names run to 100 characters; longer ones are cut in the table. */
const EVENT_WIDTH = 24;

/** The receiver's HTTP status, else why no usable status came back. */
const attemptResult = (a: Schemas['WebhookAttemptLog'] | undefined) =>
  a === undefined ? undefined : a.status_code !== null ? `HTTP ${a.status_code}` : a.error;

export const webhookRecord = (w: Schemas['AdminWebhook']) =>
  record([
    ['id', w.id],
    ['project', w.project_id],
    ['url', w.url],
    ['events', w.events.join(', ')],
    ['active', w.is_active ? 'yes' : 'no'],
    ['failure count', w.failure_count],
    ['last triggered', when(w.last_triggered_at)],
  ]);

/** The registration, then one row per delivery with its last attempt; rows cut to 120 columns. */
export function deliveriesView(w: Schemas['AdminWebhook'], ds: Schemas['WebhookDeliveryLog'][], empty: string, more: string): string {
  const rows = ds.map((d) => {
    const last = d.attempt_log.at(-1);
    return [d.id, clip(d.event, EVENT_WIDTH), d.status, d.attempts, when(d.created_at), last ? `${last.duration_ms} ms` : undefined, attemptResult(last)];
  });
  const { text, cut } = fit(table(['ID', 'EVENT', 'STATUS', 'ATTEMPTS', 'CREATED', 'DURATION', 'LAST RESULT'], rows, empty), DELIVERIES_WIDTH);
  const notes = [cut ? 'Some rows are cut to fit; --json shows every attempt in full.' : '', more].filter(Boolean);
  return [webhookRecord(w), '', text, ...(notes.length ? ['', ...notes] : [])].join('\n');
}
