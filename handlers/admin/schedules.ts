/** Operator API: the bot's schedules (list, pause, resume, run now, runs). The rules are in lib/bot/schedules.ts. */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { findProject } from './projects.js';
import { listRuns, listSchedules, runNow, setPaused } from '../../lib/bot/schedules.js';
import { OPERATOR_ACTOR } from '../../lib/accounts/audit.js';

type Ops = operations;

export const adminListSchedules: Handler<Ops['adminListSchedules']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: { schedules: await listSchedules(deps.db.sql, project.id) } };
};

export const adminPauseSchedule: Handler<Ops['adminPauseSchedule']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: { schedule: await setPaused(deps, OPERATOR_ACTOR, project.id, req.params.name, true) } };
};

export const adminResumeSchedule: Handler<Ops['adminResumeSchedule']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: { schedule: await setPaused(deps, OPERATOR_ACTOR, project.id, req.params.name, false) } };
};

export const adminRunSchedule: Handler<Ops['adminRunSchedule']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  const { run, key, event } = await runNow(deps, OPERATOR_ACTOR, project.id, req.params.name);
  // Handed to this instance's bot at once; without one, an instance's reclaim pass takes it after its lease.
  deps.bot?.onEvent(project.id, key, { kind: 'schedule', schedule: event });
  return { status: 202, data: { run } };
};

export const adminListScheduleRuns: Handler<Ops['adminListScheduleRuns']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: { runs: await listRuns(deps.db.sql, project.id, req.params.name, req.query.limit ?? 20) } };
};
