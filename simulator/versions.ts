/**
 * The Graph API versions Meta serves, by date (the simulator's clock): a call on a version Meta has
 * ended is refused as Meta refuses it; a version newer than the latest released is an unknown path.
 * Meta's Graph API changelog as of November 2026 (the service keeps the same table in
 * channel/graph-versions.ts; a test compares them). A month without a day counts from its first day.
 */
import { GraphError } from './errors.js';
import { fbtraceId } from './ids.js';

export const SIM_LATEST_VERSION = 'v26.0';

/** Each version's first day no longer served (UTC, exclusive end), or null when not announced. Newest first. */
export const SIM_VERSION_ENDS: ReadonlyArray<readonly [version: string, ends: string | null]> = [
  ['v26.0', null],
  ['v25.0', '2028-07'],
  ['v24.0', '2028-02'],
  ['v23.0', null],
  ['v22.0', '2027-05-20'],
  ['v21.0', '2027-01-21'],
  ['v20.0', '2026-09-24'],
];

const DAY_MS = 86_400_000;
const num = (v: string): number => {
  const m = /^v(\d{1,2})\.(\d{1,2})$/.exec(v);
  return m ? Number(m[1]) * 100 + Number(m[2]) : NaN;
};

function endOf(ends: string): number {
  return /^\d{4}-\d{2}-\d{2}$/.test(ends) ? Date.parse(`${ends}T00:00:00Z`) + DAY_MS : Date.parse(`${ends}-01T00:00:00Z`);
}

/** 'served', 'retired' (Meta ended it), or 'unreleased' (newer than the latest). */
export function versionState(version: string, now: Date): 'served' | 'retired' | 'unreleased' {
  const n = num(version);
  if (n > num(SIM_LATEST_VERSION)) return 'unreleased';
  const known = SIM_VERSION_ENDS.find(([v]) => v === version);
  if (!known) return n < num(SIM_VERSION_ENDS[SIM_VERSION_ENDS.length - 1][0]) ? 'retired' : 'served';
  return known[1] !== null && now.getTime() >= endOf(known[1]) ? 'retired' : 'served';
}

/**
 * What Graph answers on a version it no longer serves: OAuthException code 2635, HTTP 400. The
 * message is the one Meta's Graph answers for a deprecated version ("(#2635) You are calling a
 * deprecated version of the … API. Please update to the latest version: vNN.0.").
 */
export function deprecatedVersion(): GraphError {
  return new GraphError(400, {
    error: {
      message: `(#2635) You are calling a deprecated version of the Graph API. Please update to the latest version: ${SIM_LATEST_VERSION}.`,
      type: 'OAuthException',
      code: 2635,
      fbtrace_id: fbtraceId(),
    },
  });
}
