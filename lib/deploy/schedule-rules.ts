/**
 * The rules of a bot's schedules (`export const schedules = { name: { cron, timeZone } }`), read at
 * deploy (lib/deploy/schedules.ts) and used to compute due times (lib/bot/schedules.ts).
 *
 * Policy and why:
 * - A cron expression has exactly 5 fields (minute hour day-of-month month day-of-week), as
 *   crontab(5); a 6th (seconds) field is refused, so no schedule runs more than once a minute.
 *   Expressions are read by croner (names such as MON and JAN, ranges, steps, lists, `L`, `#`).
 * - The time zone is an IANA name (`Europe/Lisbon`, `UTC`), checked against the runtime's zone
 *   database; due times follow its daylight-saving changes (a 02:30 that does not exist that day
 *   runs at the next existing time, as croner does).
 * - The shortest gap between two runs must be at least SCHEDULE_MIN_PERIOD_SECONDS (default 60: the
 *   shortest a 5-field expression can say); a longer minimum refuses `* * * * *` and the like. The
 *   gap is measured over the next MAX_PROBES due times.
 * - At most MAX_SCHEDULES per bot; names are 1 to 64 letters, digits, `_` or `-`, starting with a letter.
 */
import { Cron } from 'croner';
import { stableHash } from '../platform/stable-hash.js';

export const MAX_SCHEDULES = 50;
const MAX_PROBES = 200;
const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

export interface ScheduleSpec {
  cron: string;
  timeZone: string;
  /** A fixed delay after each time the expression names (the schedule's spread, spreadMs), in ms. */
  offsetMs?: number;
}

/**
 * The schedule's fixed delay within its minute, in [0, spreadSeconds) whole seconds, from its
 * project and name: a thousand projects' `* * * * *` (or one project's fifty) do not all run at
 * second 0, so a burst at the top of the minute cannot take another project's replies with it.
 */
export function spreadMs(projectId: string, name: string, spreadSeconds: number): number {
  if (spreadSeconds <= 0) return 0;
  return (stableHash(`${projectId}/${name}`) % spreadSeconds) * 1000;
}

/** Which part of a declaration a problem is about (its diagnostic points there). */
export type ScheduleField = 'name' | 'cron' | 'timeZone';

export interface ScheduleProblem {
  name: string;
  field: ScheduleField;
  message: string;
}

function validZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function cronOf(spec: ScheduleSpec): Cron {
  return new Cron(spec.cron, { timezone: spec.timeZone, paused: true });
}

/** The first due time strictly after `after`, or undefined when the expression never matches again. */
export function nextDue(spec: ScheduleSpec, after: Date): Date | undefined {
  const off = spec.offsetMs ?? 0;
  const at = cronOf(spec).nextRun(new Date(after.getTime() - off));
  return at ? new Date(at.getTime() + off) : undefined;
}

/**
 * The latest due time in (`from`, `now`] — the last run missed since `from` — or undefined. Walks
 * due times from `from`; a long outage of an every-minute schedule walks at most `limit` of them and
 * then jumps to the last one before `now` by walking from an hour before it.
 */
export function latestDueUpTo(spec: ScheduleSpec, from: Date, now: Date, limit = 2000): Date | undefined {
  const off = spec.offsetMs ?? 0;
  if (off) {
    const at = latestDueUpTo({ ...spec, offsetMs: 0 }, new Date(from.getTime() - off), new Date(now.getTime() - off), limit);
    return at ? new Date(at.getTime() + off) : undefined;
  }
  const cron = cronOf(spec);
  let start = from;
  if (now.getTime() - from.getTime() > 86_400_000) start = new Date(now.getTime() - 86_400_000);
  let last: Date | undefined;
  let at = cron.nextRun(start);
  for (let i = 0; at && at.getTime() <= now.getTime() && i < limit; i++) {
    last = at;
    at = cron.nextRun(at);
  }
  return last;
}

/** What is wrong with one declared schedule (its expression and its zone both), or an empty list. `value` is what the bundle exported. */
export function scheduleProblems(name: string, value: unknown, minPeriodSeconds: number): ScheduleProblem[] {
  const problem = (field: ScheduleField, message: string): ScheduleProblem[] => [{ name, field, message }];
  if (!NAME.test(name)) return problem('name', `Schedule name "${name.slice(0, 80)}" must be 1 to 64 letters, digits, "_" or "-", starting with a letter.`);
  if (typeof value !== 'object' || value === null) return problem('name', `Schedule "${name}" must be an object { cron, timeZone }.`);
  const { cron, timeZone } = value as Record<string, unknown>;
  // The time zone and the expression are judged apart, so a declaration wrong in both says both at once.
  const zoneProblems: ScheduleProblem[] = typeof timeZone !== 'string' || !timeZone.trim()
    ? problem('timeZone', `Schedule "${name}": timeZone must be an IANA time zone such as "Europe/Lisbon".`)
    : !validZone(timeZone) ? problem('timeZone', `Schedule "${name}": "${timeZone.slice(0, 100)}" is not a known IANA time zone (e.g. "Europe/Lisbon", "UTC").`) : [];
  if (typeof cron !== 'string' || !cron.trim()) return [...problem('cron', `Schedule "${name}": cron must be a 5-field expression such as "0 9 * * *".`), ...zoneProblems];
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5) {
    return [...problem('cron', `Schedule "${name}": "${cron.slice(0, 100)}" has ${fields.length} fields; a cron expression has exactly 5 (minute hour day-of-month month day-of-week).`), ...zoneProblems];
  }
  if (zoneProblems.length) {
    // The expression is still checked, in UTC, so its own mistakes are reported with the zone's.
    try {
      cronOf({ cron, timeZone: 'UTC' });
    } catch (e) {
      return [...problem('cron', `Schedule "${name}": "${cron.slice(0, 100)}" is not a valid cron expression: ${e instanceof Error ? e.message.replace(/^CronPattern: /, '') : String(e)}.`), ...zoneProblems];
    }
    return zoneProblems;
  }
  let c: Cron;
  try {
    c = cronOf({ cron, timeZone: timeZone as string });
  } catch (e) {
    return problem('cron', `Schedule "${name}": "${cron.slice(0, 100)}" is not a valid cron expression: ${e instanceof Error ? e.message.replace(/^CronPattern: /, '') : String(e)}.`);
  }
  const runs = c.nextRuns(MAX_PROBES, new Date());
  if (runs.length === 0) return problem('cron', `Schedule "${name}": "${cron}" never runs.`);
  let shortest = Number.POSITIVE_INFINITY;
  for (let i = 1; i < runs.length; i++) shortest = Math.min(shortest, runs[i].getTime() - runs[i - 1].getTime());
  if (shortest < minPeriodSeconds * 1000) {
    return problem('cron', `Schedule "${name}": "${cron}" runs every ${Math.round(shortest / 1000)} s; the shortest period allowed is ${minPeriodSeconds} s (SCHEDULE_MIN_PERIOD_SECONDS).`);
  }
  return [];
}

/** The declared schedules, checked; `problems` is empty when all are valid. */
export function checkSchedules(declared: unknown, minPeriodSeconds: number): { schedules: Map<string, ScheduleSpec>; problems: ScheduleProblem[] } {
  const schedules = new Map<string, ScheduleSpec>();
  const problems: ScheduleProblem[] = [];
  if (declared === undefined || declared === null) return { schedules, problems };
  if (typeof declared !== 'object' || Array.isArray(declared)) {
    problems.push({ name: '', field: 'name', message: '`schedules` must be an object: { name: { cron, timeZone } }.' });
    return { schedules, problems };
  }
  const entries = Object.entries(declared as Record<string, unknown>);
  if (entries.length > MAX_SCHEDULES) {
    problems.push({ name: entries[MAX_SCHEDULES][0], field: 'name', message: `A bot declares at most ${MAX_SCHEDULES} schedules; this one declares ${entries.length}.` });
    return { schedules, problems };
  }
  for (const [name, value] of entries) {
    const found = scheduleProblems(name, value, minPeriodSeconds);
    if (found.length) problems.push(...found);
    else schedules.set(name, { cron: ((value as ScheduleSpec).cron).trim(), timeZone: (value as ScheduleSpec).timeZone.trim() });
  }
  return { schedules, problems };
}
