/**
 * A second channel with a capability set of its own: text only, like an SMS gateway. It declares
 * no capability beyond the port's core (no templates, media, flows, groups, calls, typing), speaks
 * its own notification format and keeps its own record of what it sent, so a test proves the
 * domain drives a channel that is not WhatsApp's through the same port and refuses the rest.
 *
 * Its notification: `{ number, inbound: [{ id, from, text, at }], receipts: [{ id, state, at }] }`
 * (`at` in epoch seconds; `state` queued, delivered, read or undeliverable).
 */
import { randomBytes } from 'node:crypto';
import { ChannelError } from '../../lib/channel-port/errors.js';
import type { ChannelEvent } from '../../lib/channel-port/events.js';
import type { ChannelCapabilities, ChannelCredentials, ChannelPort, OutboundMessage, SendResult } from '../../lib/channel-port/port.js';

export interface TextOnlySend {
  number: string;
  to: string;
  body: string;
  id: string;
}

const STATES = { queued: 'sent', delivered: 'delivered', read: 'read', undeliverable: 'failed' } as const;

export class TextOnlyChannel implements ChannelPort {
  readonly kind = 'text_only';
  readonly capabilities: Partial<ChannelCapabilities> = {};
  readonly sent: TextOnlySend[] = [];
  readonly read: string[] = [];

  async sendMessage(creds: ChannelCredentials, message: OutboundMessage): Promise<SendResult> {
    // The domain asked for what the channel carries; anything else reaching here is a domain bug.
    const { recipient, content } = message;
    if (content.type !== 'text' || recipient.kind !== 'customer' || !recipient.phone) {
      throw new ChannelError({ kind: 'rejected', retryable: false, operation: 'sendMessage', httpStatus: 400, message: `text to a phone only, not ${content.type} to a ${recipient.kind}`, reasons: [] });
    }
    const id = `txt-${randomBytes(6).toString('hex')}`;
    this.sent.push({ number: creds.phoneNumberId, to: recipient.phone, body: content.text.body, id });
    return { channelMessageId: id };
  }

  async markRead(_creds: ChannelCredentials, channelMessageId: string): Promise<void> {
    this.read.push(channelMessageId);
  }

  parseNotification(payload: unknown, phoneNumberId: string): ChannelEvent[] {
    const p = payload as { number?: unknown; inbound?: unknown; receipts?: unknown } | null;
    if (p?.number !== phoneNumberId) return [];
    const events: ChannelEvent[] = [];
    for (const m of Array.isArray(p.inbound) ? p.inbound : []) {
      if (typeof m?.id !== 'string' || typeof m.from !== 'string' || typeof m.text !== 'string') continue;
      events.push({ kind: 'message', channelMessageId: m.id, customer: { phone: m.from }, type: 'text', timestamp: String(m.at ?? ''), content: { type: 'text', text: { body: m.text } } });
    }
    for (const r of Array.isArray(p.receipts) ? p.receipts : []) {
      const status = STATES[r?.state as keyof typeof STATES];
      if (typeof r?.id !== 'string' || !status) continue;
      events.push({ kind: 'status', channelMessageId: r.id, status, timestamp: String(r.at ?? '') });
    }
    return events;
  }
}
