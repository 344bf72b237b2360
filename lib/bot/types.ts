/** What the service hands the bot runtime, and what the rest of the service sees of it. */
import type { SandboxLimits } from './sandbox.js';

/** The event the bot's `onMessage` receives (see scaffold/src/platform/runtime/types.ts). */
export interface BotInboundMessage {
  id: string;
  from: string;
  type: string;
  text: string | null;
  raw: Record<string, unknown>;
  conversation: { id: number; state: string };
  /** `phone` is null for a customer whose number WhatsApp withholds; `user_id` is the BSUID. */
  contact: { phone: string | null; user_id?: string | null; username?: string | null; name: string | null };
  received_at: string;
}

/** The hook the inbound path calls once a message is stored (with its bot inbox row) and `message.received` raised. */
export interface BotHook {
  /** `inboxId` is the stored message's id, its row in the bot's inbox (lib/bot/inbox.ts). */
  onInboundMessage(projectId: string, inboxId: bigint, message: BotInboundMessage): void;
  /** A deploy, rollback or project change: the next message loads the project's release again. */
  releaseChanged(projectId: string): void;
  /** Hands the inbox's messages whose lease ran out to the bot again; resolves with how many were taken. */
  reclaim(): Promise<number>;
  readonly limits: SandboxLimits;
}

/** The contract document whose SendMessageRequest checks a bot's sends (the served openapi.yaml). */
export interface SendContract {
  document: Record<string, any>;
}

/** The text of an inbound message: a text's body, or the title of a tapped button or list row. */
export function inboundText(type: string, content: Record<string, any>): string | null {
  if (type === 'text' && typeof content?.text?.body === 'string') return content.text.body;
  if (type === 'interactive') {
    const i = content?.interactive;
    const title = i?.button_reply?.title ?? i?.list_reply?.title;
    if (typeof title === 'string') return title;
  }
  if (type === 'button' && typeof content?.button?.text === 'string') return content.button.text;
  return null;
}
