/**
 * Thread control from our side (docs/coexistence.md): pass a customer's thread to another app
 * (e.g. Meta's Business Agent), take it back, or release it. The API and the dashboard call this.
 *
 * Policy and why:
 * - Passing or releasing a thread another app holds is refused before the channel is called
 *   (409 `thread_held_elsewhere`): only its holder may give it away; taking it is always allowed.
 * - The channel is called first; the holder is recorded once it accepted (a refusal records nothing).
 */
import type { Deps } from '../deps.js';
import { ApiError } from '../platform/errors.js';
import { queryRows } from '../platform/db/tx.js';
import { requireChannel } from '../channel-settings/settings.js';
import { asApiError } from '../channel-port/api-errors.js';
import { holderAfter, recordThreadHolder } from './coexistence.js';
import { threadHeldElsewhere } from './send-message.js';
import { threadHolderView } from '../conversations/views.js';
import { capability } from '../channel-port/capabilities.js';

export const THREAD_ACTIONS = ['pass', 'take', 'release'] as const;
export type ThreadAction = (typeof THREAD_ACTIONS)[number];
export const MAX_THREAD_METADATA = 2000;

export interface ThreadControlRequest {
  action: unknown;
  target_app_id?: unknown;
  metadata?: unknown;
}

function invalid(field: string, message: string): ApiError {
  return new ApiError('invalid_request', `${field} ${message}.`, { fields: [{ field, message }] });
}

/** The request, checked. */
export function parseThreadControl(body: ThreadControlRequest | undefined): { action: ThreadAction; targetAppId?: string; metadata?: string } {
  const action = body?.action;
  if (typeof action !== 'string' || !(THREAD_ACTIONS as readonly string[]).includes(action)) throw invalid('action', 'must be pass, take or release');
  const target = body?.target_app_id;
  if (action === 'pass') {
    if (typeof target !== 'string' || !/^[0-9]{1,32}$/.test(target)) throw invalid('target_app_id', 'is required to pass a thread (the other app\'s id, digits)');
  } else if (target !== undefined) throw invalid('target_app_id', 'is given only to pass a thread');
  const metadata = body?.metadata;
  if (metadata !== undefined && (typeof metadata !== 'string' || metadata.length > MAX_THREAD_METADATA)) throw invalid('metadata', `must be text of at most ${MAX_THREAD_METADATA} characters`);
  return { action: action as ThreadAction, targetAppId: target as string | undefined, metadata: metadata as string | undefined };
}

export async function controlThread(
  deps: Pick<Deps, 'db' | 'clock' | 'channel' | 'config' | 'logger'>, projectId: string, id: bigint, input: ReturnType<typeof parseThreadControl>, by: 'api' | 'dashboard',
) {
  const rows = await queryRows<{ phone: string | null; userId: string | null; holder: string | null }>(
    deps.db.sql,
    `SELECT ct.phone, ct.user_id AS "userId", v.thread_holder AS holder FROM conversations v JOIN contacts ct ON ct.id = v.contact_id
     WHERE v.project_id = $1 AND v.id = $2::bigint`,
    projectId, id.toString(),
  );
  const row = rows[0];
  if (!row) throw new ApiError('not_found', `No conversation ${id} in this project.`);
  // A WhatsApp group's conversation (docs/groups.md) has no customer's thread to pass.
  if (!row.phone && !row.userId) throw new ApiError('unsupported_in_group', 'Thread control is a customer\'s thread; a group\'s conversation has none.');
  if (row.holder !== null && input.action !== 'take') throw threadHeldElsewhere(row.holder);
  const channel = await requireChannel(deps as Deps, projectId);
  try {
    await capability(deps, channel, 'thread_control').threadControl(channel, {
      to: row.phone ? { phone: row.phone } : { userId: row.userId! }, action: input.action, targetAppId: input.targetAppId, metadata: input.metadata,
    });
  } catch (e) {
    throw asApiError(e);
  }
  const now = deps.clock.now();
  const holder = holderAfter(input.action, input.targetAppId, channel.appId);
  await recordThreadHolder(deps, projectId, id, holder, input.action, by, now);
  return { conversation_id: Number(id), action: input.action, thread: threadHolderView(holder, now), previous_holder_app_id: row.holder };
}
