/**
 * Meta's webhook notifications (POST to our channel webhook), read into what they say: per change,
 * the inbound messages (with the sender's profile name) and the statuses of sent messages, or a
 * template's status update. Malformed parts are skipped here; what they mean to storage is
 * lib/messaging/inbound.ts.
 */

export interface MetaMessage {
  id: string;
  from: string;
  timestamp?: string;
  type: string;
  [k: string]: unknown;
}

export interface MetaStatus {
  id: string;
  status: string;
  timestamp?: string;
  recipient_id?: string;
  errors?: unknown[];
  /** Echo of what the send carried: our reference of the send (lib/messaging/send-message.ts). */
  biz_opaque_callback_data?: string;
}

export interface TemplateUpdate {
  event?: string;
  message_template_id?: string | number;
  message_template_name?: string;
  message_template_language?: string;
  reason?: string;
}

export type NotificationChange =
  | { kind: 'messages'; messages: Array<{ message: MetaMessage; profileName?: string }>; statuses: MetaStatus[] }
  | { kind: 'template_status'; update: TemplateUpdate };

/** The changes of one notification addressed to `phoneNumberId` (another number of the same business account is not ours). */
export function notificationChanges(payload: any, phoneNumberId: string): NotificationChange[] {
  const out: NotificationChange[] = [];
  for (const entry of Array.isArray(payload?.entry) ? payload.entry : []) {
    for (const change of Array.isArray(entry?.changes) ? entry.changes : []) {
      const value = change?.value ?? {};
      if (change?.field === 'messages') {
        if (value.metadata?.phone_number_id && String(value.metadata.phone_number_id) !== phoneNumberId) continue;
        const names = new Map<string, string>();
        for (const c of Array.isArray(value.contacts) ? value.contacts : []) {
          if (c?.wa_id && c?.profile?.name) names.set(String(c.wa_id), String(c.profile.name).slice(0, 200));
        }
        const messages = (Array.isArray(value.messages) ? value.messages : []).filter((m: unknown) => typeof m === 'object' && m !== null).map((m: MetaMessage) => ({ message: m, profileName: names.get(String(m?.from)) }));
        out.push({ kind: 'messages', messages, statuses: Array.isArray(value.statuses) ? value.statuses : [] });
      } else if (change?.field === 'message_template_status_update') {
        out.push({ kind: 'template_status', update: value });
      }
    }
  }
  return out;
}
