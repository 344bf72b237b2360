/**
 * The Graph API versions the service knows, with the day Meta ends each one, and what that means
 * for the configured version now (`GRAPH_API_VERSION`): /readyz reports it and the log warns once a
 * day when it ends within `GRAPH_VERSION_WARN_DAYS` (90).
 *
 * Source: Meta's Graph API changelog as summarised in the research note (channel-late-2026.md,
 * November 2026). Where Meta gives only a month ("until July 2028"), the end is that month and is
 * counted from its first day (the earliest it may be). A version Meta has not dated yet has no
 * end. Versions older than the oldest listed ended before it did. Keep this table in step with the
 * simulator's (simulator/versions.ts; a test compares them).
 */

export interface GraphVersionInfo {
  version: string;
  /** Released (YYYY-MM-DD), when the note says. */
  released?: string;
  /** Last day Meta serves it: a day (YYYY-MM-DD) or a month (YYYY-MM); absent when not announced. */
  ends?: string;
}

export const LATEST_GRAPH_VERSION = 'v26.0';
export const DEFAULT_GRAPH_VERSION = LATEST_GRAPH_VERSION;

/** Newest first. */
export const GRAPH_VERSIONS: readonly GraphVersionInfo[] = [
  { version: 'v26.0', released: '2026-07-29' },
  { version: 'v25.0', released: '2026-02-18', ends: '2028-07' },
  { version: 'v24.0', released: '2025-10-08', ends: '2028-02' },
  { version: 'v23.0' },
  { version: 'v22.0', ends: '2027-05-20' },
  { version: 'v21.0', ends: '2027-01-21' },
  { version: 'v20.0', ends: '2026-09-24' },
];

export const GRAPH_VERSION_WARN_DAYS = 90;

const DAY_MS = 86_400_000;

/** `v21.0` → [21, 0]; null when it does not look like a version. */
export function parseGraphVersion(v: string): [number, number] | null {
  const m = /^v(\d{1,2})\.(\d{1,2})$/.exec(v);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

/** The first instant the version is no longer served (UTC), or null when no end is known. */
export function graphVersionEndsAt(info: GraphVersionInfo): Date | null {
  if (!info.ends) return null;
  // A day: served through that day, gone from the next midnight (UTC). A month: counted from its first day.
  return /^\d{4}-\d{2}-\d{2}$/.test(info.ends) ? new Date(Date.parse(`${info.ends}T00:00:00Z`) + DAY_MS) : new Date(`${info.ends}-01T00:00:00Z`);
}

export interface GraphVersionReport {
  version: string;
  /** `supported`; `ending_soon` (ends within the warning window); `ended`; `unknown` (not in the table). */
  status: 'supported' | 'ending_soon' | 'ended' | 'unknown';
  /** Meta's end (a day or a month), null when none is announced or the version is unknown. */
  ends: string | null;
  /** Whole days left before it ends (0 on its last day), null when no end is known; negative once ended. */
  days_left: number | null;
  latest: string;
}

/** What the configured version means at `now`. */
export function graphVersionReport(version: string, now: Date, warnDays = GRAPH_VERSION_WARN_DAYS): GraphVersionReport {
  const parsed = parseGraphVersion(version);
  const info = GRAPH_VERSIONS.find((v) => v.version === version);
  const oldest = GRAPH_VERSIONS[GRAPH_VERSIONS.length - 1];
  const base = { version, latest: LATEST_GRAPH_VERSION };
  if (!info) {
    const oldestParsed = parseGraphVersion(oldest.version)!;
    // Older than the oldest listed: ended before it did.
    if (parsed && (parsed[0] < oldestParsed[0] || (parsed[0] === oldestParsed[0] && parsed[1] < oldestParsed[1]))) {
      return { ...base, status: 'ended', ends: null, days_left: null };
    }
    return { ...base, status: 'unknown', ends: null, days_left: null };
  }
  const endsAt = graphVersionEndsAt(info);
  if (!endsAt) return { ...base, status: 'supported', ends: null, days_left: null };
  const daysLeft = Math.ceil((endsAt.getTime() - now.getTime()) / DAY_MS) - 1;
  const status = now.getTime() >= endsAt.getTime() ? 'ended' : daysLeft < warnDays ? 'ending_soon' : 'supported';
  return { ...base, status, ends: info.ends!, days_left: daysLeft };
}

/** The sentence the log and /readyz carry when the version needs moving; null when it does not. */
export function graphVersionWarning(r: GraphVersionReport): string | null {
  if (r.status === 'ending_soon') {
    return `Graph API ${r.version} ends ${r.ends} (${r.days_left} day${r.days_left === 1 ? '' : 's'} left): set GRAPH_API_VERSION=${r.latest} (docs/configuration.md, "Moving the Graph API version").`;
  }
  if (r.status === 'ended') return `Graph API ${r.version} has ended${r.ends ? ` (${r.ends})` : ''}: Meta refuses it; set GRAPH_API_VERSION=${r.latest}.`;
  if (r.status === 'unknown') return `Graph API ${r.version} is not a version this service knows (latest known ${r.latest}).`;
  return null;
}

/**
 * Warns in the log at most once per day (by the clock) while the configured version needs
 * moving. `check()` is called by /readyz and by a timer; it answers the report either way.
 */
export function graphVersionWatch(o: { version: string; now: () => Date; warn: (message: string, fields: Record<string, unknown>) => void; warnDays?: number }) {
  let lastWarnedAt: number | null = null;
  return {
    check(): GraphVersionReport {
      const now = o.now();
      const report = graphVersionReport(o.version, now, o.warnDays);
      const warning = graphVersionWarning(report);
      if (warning && (lastWarnedAt === null || now.getTime() - lastWarnedAt >= DAY_MS)) {
        lastWarnedAt = now.getTime();
        o.warn(warning, { graph_api: report });
      }
      return report;
    },
  };
}
