/**
 * Operator CLI: campaigns (the approver's side: list, show, approve now or at a time, cancel), the
 * number's throughput, and contact CSV imports with a progress display.
 */
import { createReadStream, statSync } from 'node:fs';
import { flagValue, parseChoice, parseInteger, UsageError, type ParsedArgs } from './args.js';
import type { Command } from './command.js';
import { fromLocalFile } from './local-file.js';
import * as f from './format.js';
import { billingLine, preflightCostLines } from './rate-card.js';

const STATUSES = ['pending_approval', 'scheduled', 'sending', 'completed', 'canceled', 'failed'] as const;

function broadcastRecord(b: Record<string, any>): string {
  const pf = b.preflight;
  const counts = b.counts ? Object.entries(b.counts).map(([k, v]) => `${k} ${v}`).join(', ') : '-';
  return f.record([
    ['id', b.id],
    ['project', b.project_id],
    ['name', b.name],
    ['status', b.status + (b.status_reason ? ` (${b.status_reason})` : '')],
    ['template', `${b.template_name} (${b.template_language}), ${b.category}`],
    ['recipients', b.recipient_count ?? '-'],
    ['pre-flight', pf ? `${pf.eligible} eligible; excluded ${Object.entries(pf.excluded).filter(([, v]) => v).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}; about ${pf.estimated_duration_seconds} s at ${pf.messages_per_second}/s` : '-'],
    ...preflightCostLines(pf),
    ['daily quota', pf?.quota ? quotaLine(pf.quota) : '-'],
    ['counts', counts],
    // Their own line: an operator must not read them as still to send (issue 44).
    ...(b.counts?.unknown ? [['outcome unknown', unknownLine(b.counts.unknown)] as [string, string]] : []),
    ...billingLine(b),
    ['scheduled', f.when(b.scheduled_at)],
    ['waves', b.wave_size ? `first ${b.wave_size}; next ${b.wave_scheduled_count ?? 'all'} at ${f.when(b.wave_scheduled_at)}` : '-'],
    ['retarget', b.retarget_parent_id ? `follow-up of ${b.retarget_parent_id}` : b.auto_retarget_quality ? `on (${b.retarget_count} spawned)` : 'off'],
    ['created by', `${b.creator_name ?? '-'} (${b.created_by})`],
    ['approved by', b.approved_by ?? '-'],
  ]);
}

/** The same words as the dashboard's progress (http/dashboard/broadcast-pages.ts progressOf). */
function unknownLine(n: number): string {
  return `${n} send${n === 1 ? '' : 's'} with an unknown outcome (the channel's answer was lost, or the service stopped before it came): never sent again; a status from the channel settles ${n === 1 ? 'it' : 'them'}`;
}

/** The same words as the dashboard's (lib/broadcasts/quota-hold.ts quotaSentence). */
function quotaLine(q: Record<string, any>): string {
  const base = `${q.remaining} of ${q.daily_limit} left on ${q.day} (UTC)`;
  const fits = !q.held ? `${base}: all recipients fit` : `${base}: ${q.held} recipients would be held until ${f.utcMinute(q.resumes_at)} unless the quota is raised`;
  if (q.left_for_conversations === undefined) return fits;
  return `${fits}; ${q.left_for_conversations} left for replies${q.conversation_reserve ? ` (${q.conversation_reserve} kept for them)` : ''}`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const BROADCAST_COMMANDS: Command[] = [
  {
    group: 'broadcasts', name: 'list', args: [], options: '[--status STATUS] [--project ID]', flags: ['status', 'project'],
    summary: 'Campaigns of every project, newest first (--status pending_approval: the approval queue)',
    async run(api, _pos, args: ParsedArgs) {
      const status = flagValue(args, 'status');
      const data = await api.listBroadcasts({ status: status === undefined ? undefined : parseChoice(status, '--status', STATUSES), project_id: flagValue(args, 'project'), limit: 100 });
      const rows = data.broadcasts.map((b: any) => [b.id, b.project_id, b.status + (b.status === 'sending' && b.status_reason ? ` (${b.status_reason})` : ''), b.name, b.template_name, f.when(b.scheduled_at ?? b.created_at)]);
      return { data, human: f.table(['ID', 'PROJECT', 'STATUS', 'NAME', 'TEMPLATE', 'WHEN'], rows, 'No campaigns.') };
    },
  },
  {
    group: 'broadcasts', name: 'show', args: ['<broadcastId>'],
    summary: 'A campaign with its pre-flight report, counts, waves and retarget state',
    async run(api, [id]) {
      const data = await api.getBroadcast(id);
      return { data, human: broadcastRecord(data.broadcast) };
    },
  },
  {
    group: 'broadcasts', name: 'approve', args: ['<broadcastId>'], options: '[--at ISO-TIME] [--by NAME]', flags: ['at', 'by'],
    summary: 'Approve a pending campaign: freeze its audience and send now or at --at',
    async run(api, [id], args) {
      const at = flagValue(args, 'at');
      if (at !== undefined && Number.isNaN(Date.parse(at))) throw new UsageError(`--at ${at} is not a time (e.g. 2026-03-02T09:00:00Z)`);
      const data = await api.approveBroadcast(id, { scheduled_at: at === undefined ? undefined : new Date(at).toISOString(), approved_by: flagValue(args, 'by') });
      const b = data.broadcast as any;
      const q = b.preflight?.quota;
      const hold = q?.held ? `\nThe daily quota holds ${q.held} of them until ${f.utcMinute(q.resumes_at)} (raise it with: ops projects quota ${b.project_id} <n>).` : '';
      return { data, human: `Approved: ${b.recipient_count ?? '?'} recipients, scheduled for ${f.when(b.scheduled_at)}.${hold}\n${broadcastRecord(data.broadcast)}` };
    },
  },
  {
    group: 'broadcasts', name: 'cancel', args: ['<broadcastId>'], options: '[--reason TEXT]', flags: ['reason'],
    summary: 'Cancel a campaign (also while sending); recipients not yet sent become canceled',
    async run(api, [id], args) {
      const data = await api.cancelBroadcast(id, { reason: flagValue(args, 'reason') });
      return { data, human: `Canceled.\n${broadcastRecord(data.broadcast)}` };
    },
  },
  {
    group: 'broadcasts', name: 'throughput', args: ['<projectId>', '<messagesPerSecond>'],
    summary: "Cap the project's number throughput below the level Meta gives it (1 to 1,000 messages per second; broadcasts use 90% of the smaller)",
    async run(api, [projectId, mps]) {
      const data = await api.setBroadcastThroughput(projectId, { messages_per_second: parseInteger(mps, '<messagesPerSecond>', 1, 1000) });
      return { data, human: `Number ${data.phone_number_id}: ${data.messages_per_second}/s; broadcasts at ${data.broadcast_rate}/s.` };
    },
  },
  {
    group: 'contacts', name: 'import', args: ['<projectId>', '<file.csv>'], options: '[--country CALLING-CODE]', flags: ['country'],
    summary: 'Import contacts from a CSV file (number, name, tags, opted_in), showing progress and the line report',
    async run(api, [projectId, file], args) {
      const size = fromLocalFile(file, () => statSync(file).size);
      const started = await api.createContactImport(projectId, createReadStream(file), { default_country: flagValue(args, 'country'), filename: file.split('/').pop() });
      let data = await api.getContactImport(started.import.id);
      const tty = process.stderr.isTTY;
      for (;;) {
        const imp = data.import as any;
        const line = `import ${imp.id}: ${imp.status} ${Math.round((imp.progress?.fraction ?? 0) * 100)}% of ${size} bytes, ${imp.counts?.rows ?? 0} rows`;
        process.stderr.write(tty ? `\r${line}   ` : `${line}\n`);
        if (imp.status === 'completed' || imp.status === 'failed') break;
        await sleep(500);
        data = await api.getContactImport(started.import.id);
      }
      if (tty) process.stderr.write('\n');
      const imp = data.import as any;
      const c = imp.counts ?? {};
      const report = data.rows.map((r: any) => [r.line, r.outcome, r.reason, r.code ?? '-']);
      const human = [
        `${imp.status}: ${c.rows} rows; created ${c.created}, updated ${c.updated}, unchanged ${c.unchanged}, merged ${c.merged}, rejected ${c.rejected}.`,
        imp.ignored_columns?.length ? `Ignored columns: ${imp.ignored_columns.join(', ')}` : '',
        imp.error ? `Error: ${imp.error}` : '',
        report.length ? f.table(['LINE', 'OUTCOME', 'REASON', 'CODE'], report, '') : 'Every line was imported.',
      ].filter(Boolean).join('\n');
      return { data, human };
    },
  },
];
