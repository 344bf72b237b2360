/**
 * One effect per form. Every form of the console that changes something carries a one-time token
 * (`_once`, made with the page). The first POST with it claims the token in the idempotency store
 * (lib/platform/idempotency-store.ts: `dashboard:<token>` in the project, 24 hours) and stores the
 * place the person is sent to; the same form posted again (a double click, a reload of the answer,
 * the back button) is sent to that place and changes nothing. While the first is still running the
 * second is refused (409). A refusal or an error releases the token, so the corrected form can go.
 * The token is checked against what the form says (its path and fields, the CSRF token left out):
 * a token reused for another change is refused.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Deps } from '../deps.js';
import { claimKey, completeKey, readKey, releaseKey } from '../platform/idempotency-store.js';
import { DashboardRefusal } from '../accounts/refusal.js';

const RETENTION_MS = 24 * 3600_000;
/** A claim older than this whose request never finished (a crash) may be taken again. */
const ABANDONED_AFTER_MS = 2 * 60_000;
const TOKEN = /^[a-f0-9]{32}$/;

export function onceToken(): string {
  return randomBytes(16).toString('hex');
}

function fingerprintOf(path: string, form: Record<string, unknown>): string {
  const fields = Object.keys(form).filter((k) => k !== '_csrf' && k !== '_once').sort().map((k) => [k, form[k]]);
  return createHash('sha256').update(`${path}\n${JSON.stringify(fields)}`).digest('hex');
}

export interface OnceOutcome {
  location: string;
  /** True when this POST repeated one already done: nothing was changed now. */
  repeated: boolean;
}

/** Runs `change` (which returns where to send the person) once per form token. */
export async function once(
  deps: Pick<Deps, 'db' | 'clock'>,
  projectId: string,
  form: { path: string; fields: Record<string, unknown> },
  change: () => Promise<string>,
): Promise<OnceOutcome> {
  const token = form.fields._once;
  if (typeof token !== 'string' || !TOKEN.test(token)) {
    throw new DashboardRefusal(400, 'This form is out of date (it has no one-time token). Reload the page and send it again; nothing was changed.');
  }
  const key = `dashboard:${token}`;
  const print = fingerprintOf(form.path, form.fields);
  const now = deps.clock.now();
  const claimed = await claimKey(deps.db.pool, projectId, key, print, {
    now,
    expiresAt: new Date(now.getTime() + RETENTION_MS),
    abandonedBefore: new Date(now.getTime() - ABANDONED_AFTER_MS),
  });
  if (!claimed) {
    const record = await readKey(deps.db.pool, projectId, key);
    if (record && record.fingerprint !== print) throw new DashboardRefusal(409, 'This form was already used for another change. Reload the page; nothing was changed.');
    const location = (record?.body as { location?: unknown } | null)?.location;
    if (record?.state === 'completed' && typeof location === 'string') return { location, repeated: true };
    throw new DashboardRefusal(409, 'This form is being sent already. Wait a moment and reload the page; nothing more was changed.');
  }
  let location: string;
  try {
    location = await change();
  } catch (e) {
    await releaseKey(deps.db.pool, projectId, key).catch(() => undefined);
    throw e;
  }
  await completeKey(deps.db.pool, projectId, key, 303, { location }, null);
  return { location, repeated: false };
}
