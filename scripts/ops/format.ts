/**
 * Output for people: aligned tables for lists, `label: value` lines for one record, and a block
 * that makes a one-time secret hard to miss. Machine output (`--json`) does not pass through here.
 */
import type { Schemas } from './client.js';

type Cell = string | number | boolean | null | undefined;

const text = (v: Cell) => (v === null || v === undefined || v === '' ? '-' : String(v));
/** ISO timestamps without milliseconds, still UTC and still sortable. */
export const when = (iso: string | null | undefined) => (iso ? iso.replace(/\.\d{3}Z$/, 'Z') : '-');

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

/** The secret, the warning that it is shown once, a line to paste into a shell and one to try it. */
export function secretBlock(secret: string, envName: string, baseUrl: string): string {
  return [
    '',
    '  Secret (shown only once; it cannot be retrieved again, store it now):',
    '',
    `    ${secret}`,
    '',
    '  Ready to paste:',
    '',
    `    export ${envName}=${secret}`,
    `    curl -s -H "Authorization: Bearer $${envName}" ${baseUrl}/v1/ping`,
    '',
  ].join('\n');
}

export const projectRecord = (p: Schemas['AdminProject']) =>
  record([
    ['id', p.id],
    ['name', p.name],
    ['status', p.status],
    ['daily quota', p.daily_send_quota],
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
