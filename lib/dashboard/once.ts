/**
 * One effect per form. Every form of the console that changes something carries a one-time token
 * (`_once`, made with the page): it is the form's idempotency key (`dashboard:<token>` in the
 * project), claimed through the API's own mechanism (lib/platform/idempotency.ts), with the place
 * the person is sent to as its stored answer. The same form posted again (a double click, a reload
 * of the answer, the back button) is sent to that place and changes nothing. While the first is
 * still running the second is refused (409). A refusal or an error releases the token, so the
 * corrected form can go. The token is held for what the form says (its path and fields, the CSRF
 * token left out): a token reused for another change is refused.
 */
import { randomBytes } from 'node:crypto';
import type { Deps } from '../deps.js';
import { claimOnce, fingerprint } from '../platform/idempotency.js';
import { completeKey, releaseKey } from '../platform/idempotency-store.js';
import { DashboardRefusal } from '../accounts/refusal.js';

const TOKEN = /^[a-f0-9]{32}$/;

export function onceToken(): string {
  return randomBytes(16).toString('hex');
}

function fingerprintOf(path: string, form: Record<string, unknown>): string {
  const fields = Object.fromEntries(Object.entries(form).filter(([k]) => k !== '_csrf' && k !== '_once'));
  return fingerprint('POST', path, fields);
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
  const held = await claimOnce(deps.db.sql, projectId, key, fingerprintOf(form.path, form.fields), deps.clock.now());
  if (held.state === 'mismatch') throw new DashboardRefusal(409, 'This form was already used for another change. Reload the page; nothing was changed.');
  if (held.state !== 'claimed') {
    const location = held.state === 'completed' ? (held.record.body as { location?: unknown } | null)?.location : undefined;
    if (typeof location === 'string') return { location, repeated: true };
    throw new DashboardRefusal(409, 'This form is being sent already. Wait a moment and reload the page; nothing more was changed.');
  }
  let location: string;
  try {
    location = await change();
  } catch (e) {
    await releaseKey(deps.db.sql, projectId, key).catch(() => undefined);
    throw e;
  }
  await completeKey(deps.db.sql, projectId, key, 303, { location }, null);
  return { location, repeated: false };
}
