/**
 * A project's bot secrets (table bot_secrets; this module is its only writer).
 *
 * Policy and why:
 * - A secret is a name (/^[A-Z][A-Z0-9_]{0,63}$/, like SHOP_API_TOKEN) and a value of 1 to
 *   BOT_SECRET_MAX_BYTES bytes; a project has at most BOT_SECRETS_MAX of them (400
 *   `secret_too_large` / `secret_limit_reached`, with the limit).
 * - The value is sealed at rest with the master key, bound to its project and name
 *   (lib/platform/crypto-box.ts), as channel secrets are. Nothing reads it back but the bot:
 *   listings show the name, a keyed fingerprint (never a plain hash: it cannot test guesses) and
 *   when it changed.
 * - Every set, replacement and deletion writes an audit row in the same transaction (its
 *   fingerprints before and after, never the value).
 * - The bot reads a value with `secrets.get(name)`, from the database at each call: a changed
 *   secret is seen from the next event, on every instance, without a redeploy. An unknown name is
 *   null. A preview reads the same secrets, except those marked production-only (null there).
 * - Redaction: a secret's value never reaches the bot log, a preview's answer or the service log.
 *   Text the bot makes the service write is redacted with every value of the project's secrets
 *   (read at most once a second per project, at once after a change here) and every value this
 *   process handed to the project's bot (so a value replaced a moment ago is still covered):
 *   each occurrence becomes `[secret NAME]`.
 */
import type { Deps } from '../deps.js';
import { queryRows } from '../platform/db/tx.js';
import { ApiError } from '../platform/errors.js';
import { inTransaction } from '../platform/db/transaction.js';
import { recordAuditOn, type AuditActor } from '../accounts/audit.js';
import { writeBotLog } from './bot-log.js';
import { fail, ok, type Answer, type BotDeps, type Invocation } from './host-types.js';
import { lockForTransaction } from '../platform/db/locks.js';

export const SECRET_NAME = /^[A-Z][A-Z0-9_]{0,63}$/;
const FINGERPRINT_PURPOSE = 'bot-secret';
/** How long a project's secret values are trusted for redaction before they are read again. */
const REDACTION_TTL_MS = 1000;
/** Values handed to one project's bot that stay covered by redaction in this process, at most. */
const MAX_SEEN = 1000;

type SecretDeps = Pick<Deps, 'db' | 'clock' | 'secretBox' | 'config'>;

export interface SecretView {
  name: string;
  fingerprint: string;
  production_only: boolean;
  created_at: string;
  updated_at: string;
}

interface Row {
  name: string;
  value_enc: string;
  fingerprint: string;
  production_only: boolean;
  created_at: Date;
  updated_at: Date;
}

const placeOf = (projectId: string, name: string) => `bot_secrets:${projectId}:${name}:value`;

function view(r: Row): SecretView {
  return { name: r.name, fingerprint: r.fingerprint, production_only: r.production_only, created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString() };
}

export function checkSecretName(name: unknown): string {
  if (typeof name !== 'string' || !SECRET_NAME.test(name)) {
    throw new ApiError('invalid_request', 'A secret name is an upper-case letter then up to 63 upper-case letters, digits or underscores (like SHOP_API_TOKEN).', { pattern: SECRET_NAME.source });
  }
  return name;
}

/** The project's secrets, by name; never their values. */
export async function listSecrets(deps: Pick<Deps, 'db'>, projectId: string): Promise<SecretView[]> {
  const rows = await queryRows<Row>(
    deps.db.sql,
    `SELECT name, value_enc, fingerprint, production_only, created_at, updated_at FROM bot_secrets WHERE project_id = $1 ORDER BY name COLLATE "C"`,
    projectId,
  );
  return rows.map(view);
}

/** Creates or replaces a secret; `created` tells which. The audit row is written with it. */
export async function setSecret(
  deps: SecretDeps,
  actor: AuditActor,
  projectId: string,
  rawName: unknown,
  input: { value: unknown; productionOnly?: boolean },
): Promise<{ secret: SecretView; created: boolean }> {
  const name = checkSecretName(rawName);
  const value = input.value;
  if (typeof value !== 'string' || value.length === 0) throw new ApiError('invalid_request', 'value must be a non-empty string.');
  const size = Buffer.byteLength(value, 'utf8');
  const maxBytes = deps.config.botSecretMaxBytes;
  if (size > maxBytes) throw new ApiError('secret_too_large', `A secret's value is at most ${maxBytes} bytes; this one is ${size}.`, { limit: maxBytes, size });
  const now = deps.clock.now();
  const fingerprint = deps.secretBox.fingerprint(value, FINGERPRINT_PURPOSE);
  const sealed = deps.secretBox.seal(value, placeOf(projectId, name));
  const result = await inTransaction(deps.db.pool, async (client) => {
    // One writer at a time per project: the count limit holds under concurrent sets.
    await lockForTransaction(client, `bot_secrets:${projectId}`);
    const [before] = await queryRows<Row>(client, 'SELECT name, value_enc, fingerprint, production_only, created_at, updated_at FROM bot_secrets WHERE project_id = $1 AND name = $2', projectId, name);
    if (!before) {
      const max = deps.config.botSecretsMax;
      const count = Number((await queryRows<{ n: bigint }>(client, 'SELECT count(*) AS n FROM bot_secrets WHERE project_id = $1', projectId))[0].n);
      if (count >= max) throw new ApiError('secret_limit_reached', `A project has at most ${max} secrets; delete one first.`, { limit: max, count });
    }
    const productionOnly = input.productionOnly ?? before?.production_only ?? false;
    const [saved] = await queryRows<Row>(
      client,
      `INSERT INTO bot_secrets (project_id, name, value_enc, fingerprint, production_only, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)
       ON CONFLICT (project_id, name) DO UPDATE SET value_enc = EXCLUDED.value_enc, fingerprint = EXCLUDED.fingerprint, production_only = EXCLUDED.production_only, updated_at = EXCLUDED.updated_at
       RETURNING name, value_enc, fingerprint, production_only, created_at, updated_at`,
      projectId, name, sealed, fingerprint, productionOnly, now,
    );
    await recordAuditOn(client, now, actor, {
      projectId,
      action: before ? 'secret.replace' : 'secret.set',
      subject: name,
      before: before ? { fingerprint: before.fingerprint, production_only: before.production_only } : undefined,
      after: { fingerprint: saved.fingerprint, production_only: saved.production_only },
    });
    return { secret: view(saved), created: !before };
  });
  // Redaction covers the new value at once in this process.
  rememberValue(projectId, name, value);
  redactionCache.delete(projectId);
  return result;
}

/** Deletes a secret (404 when there is none); the audit row is written with it. */
export async function deleteSecret(deps: Pick<Deps, 'db' | 'clock'>, actor: AuditActor, projectId: string, rawName: unknown): Promise<SecretView> {
  const name = checkSecretName(rawName);
  const now = deps.clock.now();
  const gone = await inTransaction(deps.db.pool, async (client) => {
    const [row] = await queryRows<Row>(
      client,
      'DELETE FROM bot_secrets WHERE project_id = $1 AND name = $2 RETURNING name, value_enc, fingerprint, production_only, created_at, updated_at',
      projectId, name,
    );
    if (!row) throw new ApiError('not_found', `No secret ${name} in this project.`);
    await recordAuditOn(client, now, actor, { projectId, action: 'secret.delete', subject: name, before: { fingerprint: row.fingerprint, production_only: row.production_only } });
    return row;
  });
  redactionCache.delete(projectId);
  return view(gone);
}

/** The value of one secret as the bot reads it: null when unknown, or production-only in a preview. */
export async function readSecret(deps: Pick<Deps, 'db' | 'secretBox'>, projectId: string, name: string, mode: 'production' | 'preview'): Promise<string | null> {
  const [row] = await queryRows<Row>(deps.db.sql, 'SELECT name, value_enc, production_only FROM bot_secrets WHERE project_id = $1 AND name = $2', projectId, name);
  if (!row || (mode === 'preview' && row.production_only)) return null;
  const value = deps.secretBox.open(row.value_enc, placeOf(projectId, name));
  rememberValue(projectId, name, value);
  return value;
}

/** The host API's `secrets.get` (its argument is checked by its schema, lib/bot/host-api.ts). */
export async function runSecretsGet(deps: BotDeps, inv: Invocation, args: { name: string }): Promise<Answer> {
  if (!SECRET_NAME.test(args.name)) return fail('invalid_request', 'A secret name is like SHOP_API_TOKEN: /^[A-Z][A-Z0-9_]{0,63}$/.');
  return ok(await readSecret(deps, inv.projectId, args.name, inv.mode));
}

// ---------------------------------------------------------------------------------------------
// Redaction

/** Per project: value → name of every value handed to its bot by this process (most recent last). */
const seen = new Map<string, Map<string, string>>();
const redactionCache = new Map<string, { at: number; values: Map<string, string> }>();

function rememberValue(projectId: string, name: string, value: string): void {
  let values = seen.get(projectId);
  if (!values) seen.set(projectId, (values = new Map()));
  values.delete(value);
  values.set(value, name);
  if (values.size > MAX_SEEN) values.delete(values.keys().next().value as string);
}

async function currentValues(deps: Pick<Deps, 'db' | 'secretBox'>, projectId: string): Promise<Map<string, string>> {
  const cached = redactionCache.get(projectId);
  if (cached && performance.now() - cached.at < REDACTION_TTL_MS) return cached.values;
  const rows = await queryRows<Row>(deps.db.sql, 'SELECT name, value_enc FROM bot_secrets WHERE project_id = $1', projectId);
  const values = new Map<string, string>();
  for (const r of rows) {
    try {
      values.set(deps.secretBox.open(r.value_enc, placeOf(projectId, r.name)), r.name);
    } catch {
      // A value that does not open (another master key) cannot be printed by the bot either.
    }
  }
  redactionCache.set(projectId, { at: performance.now(), values });
  if (redactionCache.size > 10_000) redactionCache.delete(redactionCache.keys().next().value as string);
  return values;
}

/** Replaces every secret value of the project in `text` with `[secret NAME]`, longest values first. */
export type Redactor = (text: string) => string;

export async function redactorFor(deps: Pick<Deps, 'db' | 'secretBox'>, projectId: string): Promise<Redactor> {
  const all = new Map<string, string>([...(seen.get(projectId) ?? new Map<string, string>()), ...(await currentValues(deps, projectId))]);
  if (all.size === 0) return (text) => text;
  const values = [...all.keys()].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const v of values) if (out.includes(v)) out = out.split(v).join(`[secret ${all.get(v)}]`);
    return out;
  };
}

/** Every string inside a JSON value, redacted (a preview's answer). */
export function redactDeep<T>(value: T, redact: Redactor): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redact)) as T;
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k), redactDeep(v, redact)])) as T;
  }
  return value;
}

/** A bot log entry with the project's secrets redacted. */
export async function redactedBotLog(deps: Pick<Deps, 'db' | 'clock' | 'secretBox'>, projectId: string, entry: { level: string; kind: string; message: string; deploymentId?: string | null }): Promise<void> {
  const redact = await redactorFor(deps, projectId);
  await writeBotLog(deps, projectId, { ...entry, message: redact(entry.message) });
}

/** For tests: forget what this process remembers of a project's values. */
export function forgetSecretValues(projectId: string): void {
  seen.delete(projectId);
  redactionCache.delete(projectId);
}

