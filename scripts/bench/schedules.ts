/**
 * Issue 46's schedule goal, part of the bot section: a schedule starts within 1 s of its due time
 * at p99. BENCH_SCHEDULE_PROJECTS projects (default 5) each deploy a bot declaring 10 schedules due
 * every minute; each run logs how late it started (the isolate's clock at the start of
 * `onSchedule` minus the run's due time, on the same machine's clock as the service). The section
 * waits for BENCH_SCHEDULE_MINUTES due minutes (default 1) after the deploys, then reads the bot logs.
 */
import type { BenchContext } from './context.js';
import { goal } from './goals.js';

const SCHEDULES = 10;

function bot(): string {
  const entries = Array.from({ length: SCHEDULES }, (_, i) => `  s${i}: { cron: '* * * * *', timeZone: 'UTC' },`).join('\n');
  return `import { log, type ScheduleContext } from './platform/runtime/index.js';
export const schedules = {
${entries}
};
export async function onSchedule(name: string, ctx: ScheduleContext): Promise<void> {
  const lateMs = Date.now() - Date.parse(ctx.due_at);
  await log.info('late ' + lateMs + ' ' + name + ' ' + ctx.due_at + ' ' + ctx.trigger);
}
`;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

export async function benchSchedules(ctx: BenchContext): Promise<void> {
  const projects = Number(process.env.BENCH_SCHEDULE_PROJECTS ?? 5);
  const minutes = Number(process.env.BENCH_SCHEDULE_MINUTES ?? 1);
  const ids: string[] = [];
  for (let i = 0; i < projects; i++) {
    const p = await ctx.project(['code:read', 'code:write']);
    const headers = { authorization: `Bearer ${p.key}`, 'content-type': 'application/json' };
    const put = await fetch(`${ctx.base}/v1/files/src%2Fbot.ts`, { method: 'PUT', headers, body: JSON.stringify({ content: bot() }) });
    if (put.status !== 200) throw new Error(`put failed: ${put.status}`);
    const dep = await fetch(`${ctx.base}/v1/deployments`, { method: 'POST', headers, body: '{}' });
    if (dep.status !== 201) throw new Error(`deploy failed: ${dep.status} ${await dep.text()}`);
    ids.push(p.id);
  }
  // The first due minute after the deploys, then `minutes` of them, and 3 s for the runs to log.
  const first = Math.ceil((Date.now() + 1000) / 60_000) * 60_000;
  const until = first + (minutes - 1) * 60_000 + 3000;
  console.log(`\nschedules: ${projects} projects × ${SCHEDULES} schedules every minute; waiting ${Math.round((until - Date.now()) / 1000)} s for ${minutes} due minute(s)`);
  await new Promise((r) => setTimeout(r, until - Date.now()));
  const late: number[] = [];
  for (const id of ids) {
    const logs = (await ctx.admin('GET', `/admin/projects/${id}/bot/logs?limit=200`)).logs as Array<{ message: string }>;
    for (const l of logs) {
      const m = /^late (-?\d+) \S+ (\S+) cron$/.exec(l.message);
      if (m && Date.parse(m[2]) >= first) late.push(Number(m[1]));
    }
  }
  const expected = projects * SCHEDULES * minutes;
  if (late.length === 0) {
    goal({ id: 'P9', what: 'schedule start p99 vs its due time + 1 s', ratio: NaN, op: '<=', target: 1, detail: `no runs seen of ${expected} expected` });
    return;
  }
  const p50 = pct(late, 50);
  const p99 = pct(late, 99);
  console.log(`schedule runs started: ${late.length} of ${expected}; lateness p50 ${p50} ms, p99 ${p99} ms, max ${Math.max(...late)} ms`);
  goal({ id: 'P9', what: 'schedule start p99 lateness vs 1 s', ratio: Math.max(p99, 0) / 1000, op: '<=', target: 1, detail: `p99 ${p99} ms of ${late.length} runs (of ${expected})` });
}
