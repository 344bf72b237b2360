/**
 * Failed sign-ins slow the one who fails, never the account's owner elsewhere.
 *
 * Counted in the shared counters (`deps.counters`, Redis when configured), so every instance agrees:
 * - **per (account, address)**: an address's failures on one email in the hour. The first
 *   `freePerPair` (5) are free; from then on that address waits before its next try on that
 *   account, 1 s after the 5th failure, then 2 s, 4 s … doubling, capped at `maxWaitMs` (15 min)
 *   and never past the hour's end. A try inside the wait is refused (429 with `Retry-After`), the
 *   right password included, without checking it; it does not count as a failure.
 * - **per account** (all addresses): it never refuses. Once an account has `accountAlarm` (10)
 *   failures in the hour, an address that fails on it waits from its first failure (1 s, 2 s, …)
 *   instead of after five: a spread-out guesser gets one free try per address. An address that has
 *   not failed on the account is never made to wait, so the right password from it signs in.
 * - **per address** (all emails): 20 failures in 15 minutes stop that address until the window ends
 *   (429, right password included): spraying one password over many emails.
 * An IPv6 address counts by its /64 (one host usually holds the whole prefix). The windows are the
 * counters' fixed windows: at a window's end its counts and waits start again.
 *
 * A counter store that cannot answer lets the attempt through (logged), like the API's rate limit:
 * scrypt still makes each guess slow. Each failure whose password was checked is written to the
 * audit trail of every project of the account (the email tried, the address, the reason; never the
 * password); tries refused by the throttle are not (they were not checked, and would let anyone fill
 * the trail), and a failure on an email without an account is only logged (no project to hold it).
 */
import { isIPv6 } from 'node:net';
import type { Deps } from '../deps.js';
import { DashboardRefusal } from './refusal.js';
import { recordAuditAfter } from './audit.js';

export interface LoginThrottleSettings {
  /** Window of the (account, address) and account counts. */
  pairWindowMs: number;
  /** Failures of an address on an account before it waits. */
  freePerPair: number;
  /** The first wait; each further failure doubles it. */
  firstWaitMs: number;
  maxWaitMs: number;
  /** Failures on an account (all addresses) past which every failing address waits from its first failure. */
  accountAlarm: number;
  /** Window of the per-address count. */
  addressWindowMs: number;
  /** Failures of an address (all emails) past which it is refused until its window ends. */
  perAddress: number;
}

export const LOGIN_THROTTLE: LoginThrottleSettings = {
  pairWindowMs: 60 * 60_000,
  freePerPair: 5,
  firstWaitMs: 1_000,
  maxWaitMs: 15 * 60_000,
  accountAlarm: 10,
  addressWindowMs: 15 * 60_000,
  perAddress: 20,
};

type ThrottleDeps = Pick<Deps, 'counters' | 'clock' | 'logger'>;

/** What a failed sign-in is recorded as. */
export type FailureReason = 'wrong_password' | 'no_password_set' | 'unknown_email';

/**
 * The address a count is kept for: IPv4 as is (an IPv4-mapped IPv6 address as its IPv4), IPv6 by its
 * /64 prefix, anything else (no address known) as given.
 */
export function throttleAddress(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1];
  const bare = address.replace(/%.*$/, '');
  if (!isIPv6(bare)) return address;
  const groups = (part: string) => (part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : []);
  const [head, tail] = bare.toLowerCase().split('::') as [string, string | undefined];
  const h = groups(head);
  const all = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - groups(tail).length).fill('0'), ...groups(tail)];
  return `${all.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}

const keyOf = {
  address: (address: string) => `dash-login:addr:${address}`,
  account: (email: string) => `dash-login:acct:${email}`,
  pair: (email: string, address: string) => `dash-login:pair:${address}|${email}`,
  /** When the pair's failure number `n` lets it try again (ms after the window's start): one writer per `n`. */
  wait: (email: string, address: string, n: number) => `dash-login:wait:${address}|${email}|${n}`,
};

/** The wait after an address's `failures`-th failure on an account (0: none yet). */
export function waitAfter(failures: number, accountFailures: number, s: LoginThrottleSettings = LOGIN_THROTTLE): number {
  const free = accountFailures >= s.accountAlarm ? 1 : s.freePerPair;
  if (failures < free) return 0;
  return Math.min(s.firstWaitMs * 2 ** Math.min(failures - free, 40), s.maxWaitMs);
}

function unavailable(deps: ThrottleDeps, e: unknown): undefined {
  deps.logger.warn('dashboard sign-in throttle: counters unavailable', { error: String(e) });
  return undefined;
}

function refuse(nowMs: number, untilMs: number, message: string): never {
  const seconds = Math.max(1, Math.ceil((untilMs - nowMs) / 1000));
  const when = seconds < 120 ? `${seconds} second(s)` : `${Math.ceil(seconds / 60)} minute(s)`;
  throw new DashboardRefusal(429, `${message} Try again in ${when}.`, seconds);
}

/**
 * Refuses when this address has failed too often in all, or is waiting after its failures on this
 * account. An address that never failed on the account is let through whatever others did.
 */
export async function checkLoginAllowed(deps: ThrottleDeps, email: string, rawAddress: string, s = LOGIN_THROTTLE): Promise<void> {
  const address = throttleAddress(rawAddress);
  const now = deps.clock.now();
  let state;
  try {
    const [addr, pair] = await Promise.all([
      deps.counters.hit(keyOf.address(address), s.addressWindowMs, now, 0),
      deps.counters.hit(keyOf.pair(email, address), s.pairWindowMs, now, 0),
    ]);
    const wait = pair.count > 0 ? await deps.counters.hit(keyOf.wait(email, address, pair.count), s.pairWindowMs, now, 0) : undefined;
    state = { addr, pair, wait };
  } catch (e) {
    return unavailable(deps, e);
  }
  const nowMs = now.getTime();
  if (state.addr.count >= s.perAddress) refuse(nowMs, state.addr.resetAt.getTime(), 'Too many failed sign-ins from your address.');
  if (state.wait && state.wait.count > 0) {
    const windowEnd = state.wait.resetAt.getTime();
    const until = Math.min(windowEnd - s.pairWindowMs + state.wait.count, windowEnd);
    if (until > nowMs) refuse(nowMs, until, 'Too many failed sign-ins for this account from your address.');
  }
}

/**
 * Counts a failed sign-in (its address, its pair, its account), sets the pair's wait when it has
 * one, and writes the failure to the audit trail of the account's projects (in the background:
 * the answer does not wait for it, so it does not tell a known email from an unknown one). Never throws.
 */
export async function recordLoginFailure(
  deps: ThrottleDeps & Pick<Deps, 'db'>,
  failure: { email: string; address: string; account: { id: string } | null; reason: FailureReason; via: 'sign-in' | 'invitation' },
  s = LOGIN_THROTTLE,
): Promise<void> {
  const address = throttleAddress(failure.address);
  const { email } = failure;
  const now = deps.clock.now();
  try {
    const [, pair, account] = await Promise.all([
      deps.counters.hit(keyOf.address(address), s.addressWindowMs, now, 1),
      deps.counters.hit(keyOf.pair(email, address), s.pairWindowMs, now, 1),
      deps.counters.hit(keyOf.account(email), s.pairWindowMs, now, 1),
    ]);
    const wait = waitAfter(pair.count, account.count, s);
    if (wait > 0) {
      const windowStart = pair.resetAt.getTime() - s.pairWindowMs;
      // The pair's count is atomic, so this failure's number is its own: no other writer of this key.
      await deps.counters.hit(keyOf.wait(email, address, pair.count), s.pairWindowMs, now, now.getTime() + wait - windowStart);
    }
  } catch (e) {
    unavailable(deps, e);
  }
  // Not awaited: the answer to a known email must not come later than to an unknown one.
  void auditFailure(deps, failure, now);
}

async function auditFailure(deps: Pick<Deps, 'db' | 'logger'>, failure: Parameters<typeof recordLoginFailure>[1], now: Date): Promise<void> {
  const { email, address, reason, via } = failure;
  const detail = { email, address, reason, via };
  if (!failure.account) {
    deps.logger.info('dashboard sign-in failed', detail);
    return;
  }
  try {
    const memberships = await deps.db.prisma.dashboardMembership.findMany({ where: { accountId: failure.account.id }, select: { projectId: true } });
    const actor = { accountId: null, email: `not signed in (${address})` };
    const clock = { now: () => now };
    for (const { projectId } of memberships) {
      await recordAuditAfter({ db: deps.db, clock }, actor, { projectId, action: 'signin.failed', subject: email, after: detail });
    }
    if (memberships.length === 0) deps.logger.info('dashboard sign-in failed', detail);
  } catch (e) {
    // The person's answer (wrong password) stands; the lost row is in the log.
    deps.logger.error('dashboard sign-in failure could not be audited', { ...detail, error: String(e) });
  }
}
