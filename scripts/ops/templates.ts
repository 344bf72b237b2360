/**
 * Operator CLI: deciding a submitted template on the Cloud API simulator (outside production), as
 * Meta's review would. With the real Graph API, Meta decides in WhatsApp Manager.
 */
import { flagValue } from './args.js';
import type { Command } from './command.js';

function decide(decision: 'APPROVED' | 'REJECTED'): Command['run'] {
  return async (api, [projectId, name], args) => {
    const reason = flagValue(args, 'reason');
    const data = await api.decideTemplate(projectId, name, { decision, language: flagValue(args, 'language'), ...(reason !== undefined ? { reason } : {}) });
    const t = data.template;
    return { data, human: `Template ${t.name} (${t.language}, ${t.category}) is ${t.status}${t.rejected_reason ? `: ${t.rejected_reason}` : ''}.` };
  };
}

export const TEMPLATE_COMMANDS: Command[] = [
  {
    group: 'templates', name: 'approve', args: ['<projectId>', '<name>'], options: '[--language CODE]', flags: ['language'],
    summary: 'Approve a submitted template on the simulator (not in production: Meta decides there)',
    run: decide('APPROVED'),
  },
  {
    group: 'templates', name: 'reject', args: ['<projectId>', '<name>'], options: '[--language CODE] [--reason TEXT]', flags: ['language', 'reason'],
    summary: 'Reject a submitted template on the simulator (reason default INVALID_FORMAT)',
    run: decide('REJECTED'),
  },
];
