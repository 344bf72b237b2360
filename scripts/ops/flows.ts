/**
 * Operator CLI: a project's WhatsApp Flows at the channel. Publishing is irreversible at the
 * channel, so it is the operator's act: `flows publish` (with --dry-run, the channel's validation
 * errors without publishing), `flows deprecate`, `flows list`.
 */
import { flagSet } from './args.js';
import type { Command } from './command.js';
import * as f from './format.js';

type Finding = { error?: unknown; message?: unknown; line_start?: unknown; column_start?: unknown };
const findingLines = (list: Finding[]) =>
  list.map((e) => `  ${String(e.error)}${e.line_start ? ` (line ${String(e.line_start)}${e.column_start ? `, column ${String(e.column_start)}` : ''})` : ''}: ${String(e.message)}`).join('\n');

export const FLOW_COMMANDS: Command[] = [
  {
    group: 'flows', name: 'list', args: ['<projectId>'],
    summary: "List a project's flows: status, current and published version, channel flow ids",
    async run(api, [projectId]) {
      const data = await api.listFlows(projectId);
      const rows = data.flows.map((x) => [x.name, x.status, String(x.current_version), x.published_version === null ? '' : String(x.published_version), x.channel_flow_id ?? '', String(x.channel_findings.length)]);
      return { data, human: f.table(['NAME', 'STATUS', 'VERSION', 'PUBLISHED', 'CHANNEL FLOW', 'CHANNEL ERRORS'], rows, 'No flows in this project.') };
    },
  },
  {
    group: 'flows', name: 'publish', args: ['<projectId>', '<name>'], options: '[--dry-run]', flags: ['dry-run'],
    summary: "Publish a flow's current version to the channel (irreversible); --dry-run uploads and shows the channel's validation errors only",
    async run(api, [projectId, name], args) {
      const dryRun = flagSet(args, 'dry-run');
      const data = await api.publishFlow(projectId, name, { dry_run: dryRun });
      const x = data.flow;
      const human = data.published
        ? `Published version ${x.published_version} of flow ${x.name} (channel flow ${x.channel_flow_id}).`
        : `Dry run: version ${x.current_version} of flow ${x.name} uploaded to channel draft ${x.channel_draft_id}; the channel found no validation errors. Nothing was published.`;
      return { data, human: x.channel_findings.length ? `${human}\n${findingLines(x.channel_findings as Finding[])}` : human };
    },
  },
  {
    group: 'flows', name: 'deprecate', args: ['<projectId>', '<name>'],
    summary: 'Deprecate a published flow at the channel (it can no longer be sent)',
    async run(api, [projectId, name]) {
      const data = await api.deprecateFlow(projectId, name);
      return { data, human: `Flow ${data.flow.name} is deprecated (channel flow ${data.flow.channel_flow_id}).` };
    },
  },
];
