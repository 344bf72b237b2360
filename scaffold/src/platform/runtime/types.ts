/** Types of the bot's world (managed by the platform). */

export interface InboundMessage {
  /** The channel's message id (wamid). */
  id: string;
  /** The customer's phone number, digits only; its business-scoped user id (e.g. `US.1349…`) when WhatsApp withholds the number. Send to it as given. */
  from: string;
  /** text, image, interactive, … */
  type: string;
  /** The text of a text message, or the title of a tapped button or list row; null otherwise. */
  text: string | null;
  /** The message as the channel sent it. */
  raw: Record<string, unknown>;
  conversation: { id: number; state: string };
  contact: { phone: string | null; user_id?: string | null; username?: string | null; name: string | null };
  received_at: string;
  /**
   * Set when the message is one of the project's consent keywords (STOP, START, …): the service
   * has already changed the customer's marketing consent (and sent the project's confirmation, if
   * it has one), so most bots should not answer it. Null for any other message.
   */
  consent?: { change: 'opted_out' | 'opted_in'; keyword: string } | null;
}

export interface InboundEvent {
  type: 'message';
  message: InboundMessage;
}

export interface BotModule {
  onMessage?: (message: InboundMessage) => unknown | Promise<unknown>;
}

/** The body of POST /v1/messages. */
export type SendMessageRequest =
  | { type: 'text'; phone: string; content: string }
  | { type: 'image' | 'video' | 'document' | 'audio'; phone: string; media: { slug?: string; media_id?: string; caption?: string; filename?: string } }
  | { type: 'interactive'; phone: string; interactive: { body: string; header?: string; footer?: string; buttons?: Array<{ id: string; title: string }>; list?: unknown } }
  | { type: 'template'; phone: string; template: { name: string; language: string; [k: string]: unknown } };

export type SendResult =
  | { ok: true; id: string }
  | { ok: false; error: { code: string; message: string } };

export type TableValue = string | number | boolean | null;
export type TableRow = Record<string, unknown>;
export interface TableFilter {
  column: string;
  op: 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte' | 'like' | 'ilike' | 'is';
  value: TableValue;
}
