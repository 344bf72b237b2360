/** The confirmation a consent keyword answers with (the project's text; lib/consent/keywords.ts). */
import type { Deps } from '../deps.js';
import { sendMessage } from './send-message.js';
import { automationAuthor } from '../conversations/authors.js';

/** Sends the keyword's confirmation text; a failure is logged, never fails the webhook. */
export async function sendConsentConfirmation(deps: Deps, projectId: string, to: { phone: string } | { user_id: string }, text: string): Promise<void> {
  try {
    const project = await deps.db.prisma.project.findUnique({ where: { id: projectId }, select: { id: true, name: true, status: true } });
    if (!project) return;
    await sendMessage(deps, project, { type: 'text', ...to, content: text } as never, { author: automationAuthor('consent_confirmation') });
  } catch (e) {
    deps.logger.warn('consent confirmation not sent', { project_id: projectId, error: (e as Error).message });
  }
}
