/**
 * Failed sign-ins are counted per account (email) and per client address in the shared counters,
 * so every instance sees the same totals. Past the limit, sign-in is refused (429, with when to
 * retry) until the window ends, even with the right password: guessing is slowed to a few tries
 * per window per account and per address. A counter store that cannot answer lets the attempt
 * through (logged), like the API's rate limit: scrypt still makes each guess slow.
 */
import type { Deps } from '../deps.js';
import { DashboardRefusal } from './refusal.js';

export interface LoginThrottleSettings {
  windowMs: number;
  perAccount: number;
  perAddress: number;
}

export const LOGIN_THROTTLE: LoginThrottleSettings = { windowMs: 15 * 60_000, perAccount: 5, perAddress: 20 };

type ThrottleDeps = Pick<Deps, 'counters' | 'clock' | 'logger'>;

const keys = (email: string, address: string) => [`dash-login:acct:${email}`, `dash-login:addr:${address}`];

async function hits(deps: ThrottleDeps, email: string, address: string, amount: number, s: LoginThrottleSettings) {
  const now = deps.clock.now();
  try {
    return await Promise.all(keys(email, address).map((k) => deps.counters.hit(k, s.windowMs, now, amount)));
  } catch (e) {
    deps.logger.warn('dashboard sign-in throttle: counters unavailable', { error: String(e) });
    return undefined;
  }
}

/** Refuses when this account or this address has too many failures in the current window. */
export async function checkLoginAllowed(deps: ThrottleDeps, email: string, address: string, s = LOGIN_THROTTLE): Promise<void> {
  const current = await hits(deps, email, address, 0, s);
  if (!current) return;
  const [account, addr] = current;
  const blocked = account.count >= s.perAccount ? account : addr.count >= s.perAddress ? addr : undefined;
  if (blocked) {
    const seconds = Math.max(1, Math.ceil((blocked.resetAt.getTime() - deps.clock.now().getTime()) / 1000));
    throw new DashboardRefusal(429, `Too many failed sign-ins. Try again in ${Math.ceil(seconds / 60)} minute(s).`, seconds);
  }
}

export async function recordLoginFailure(deps: ThrottleDeps, email: string, address: string, s = LOGIN_THROTTLE): Promise<void> {
  await hits(deps, email, address, 1, s);
}
