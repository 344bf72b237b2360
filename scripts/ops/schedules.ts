/** Operator CLI: the bot's schedules (docs/bot-reach.md, "Scheduled tasks"): list, pause, resume, run now, recent runs. */
import { flagValue, parseInteger, type ParsedArgs } from './args.js';
import type { Command } from './command.js';
import type { Schemas } from './client.js';
import * as f from './format.js';

type Run = Schemas['BotScheduleRun'];

const outcomeText = (r: Run) => {
  if (!r.error) return r.outcome;
  const at = r.error.file ? ` at ${r.error.file}:${r.error.line}:${r.error.column}` : '';
  return `${r.outcome}: ${r.error.message}${at}`;
};

const runTable = (runs: Run[]) =>
  f.table(['DUE', 'TRIGGER', 'STARTED', 'DURATION', 'OUTCOME'], runs.map((r) => [f.when(r.due_at), r.trigger, r.started_at ? f.when(r.started_at) : '-', r.duration_ms === null ? '-' : `${r.duration_ms} ms`, outcomeText(r)]), 'No runs yet.');

const scheduleTable = (list: Schemas['BotSchedule'][]) =>
  f.table(
    ['NAME', 'CRON', 'TIME ZONE', 'NEXT RUN', 'LAST RUN', 'DECLARED AT'],
    list.map((s) => [s.name, s.cron, s.time_zone, s.paused ? 'paused' : s.next_run_at ? f.when(s.next_run_at) : '-', s.last_run ? `${f.when(s.last_run.due_at)} ${s.last_run.outcome}` : '-', s.source ?? '-']),
    'No schedules: the active release declares none (export const schedules in src/bot.ts).',
  );

export const SCHEDULE_COMMANDS: Command[] = [
  {
    group: 'schedules', name: 'list', args: ['<projectId>'],
    summary: "List the bot's schedules: cron, time zone, next and last runs, where declared",
    async run(api, [projectId]) {
      const data = await api.listSchedules(projectId);
      return { data, human: scheduleTable(data.schedules) };
    },
  },
  {
    group: 'schedules', name: 'pause', args: ['<projectId>', '<name>'],
    summary: 'Pause a schedule (kept across deploys until resumed; audited)',
    async run(api, [projectId, name]) {
      const data = await api.pauseSchedule(projectId, name);
      return { data, human: `Schedule ${data.schedule.name} paused.` };
    },
  },
  {
    group: 'schedules', name: 'resume', args: ['<projectId>', '<name>'],
    summary: 'Resume a schedule from its next due time (no catch-up of the paused time; audited)',
    async run(api, [projectId, name]) {
      const data = await api.resumeSchedule(projectId, name);
      return { data, human: `Schedule ${data.schedule.name} resumed; next run ${data.schedule.next_run_at ? f.when(data.schedule.next_run_at) : '-'}.` };
    },
  },
  {
    group: 'schedules', name: 'run', args: ['<projectId>', '<name>'],
    summary: 'Run a schedule now, once (a manual run; audited); its outcome is in `schedules runs`',
    async run(api, [projectId, name]) {
      // The answer is 202 (queued), which the client's typing of `data` does not cover.
      const data = (await api.runSchedule(projectId, name)) as Schemas['BotScheduleRunResponse']['data'];
      return { data, human: `Run ${data.run.id} of ${data.run.schedule} queued.` };
    },
  },
  {
    group: 'schedules', name: 'runs', args: ['<projectId>', '<name>'], options: '[--limit N]', flags: ['limit'],
    summary: "A schedule's recent runs: due time, trigger, start, duration, outcome (the error at the author's line)",
    async run(api, [projectId, name], args: ParsedArgs) {
      const limit = flagValue(args, 'limit');
      const data = await api.listScheduleRuns(projectId, name, limit === undefined ? {} : { limit: parseInteger(limit, '--limit', 1, 100) });
      return { data, human: runTable(data.runs) };
    },
  },
];
