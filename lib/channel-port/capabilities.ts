/**
 * The domain's one question to a channel about what it can do. A capability the project's channel
 * lacks is refused before anything is stored or sent: 409 `unsupported_by_channel`, naming it.
 */
import { ApiError } from '../platform/errors.js';
import type { Capability, ChannelCapabilities, ChannelPort, OutboundMessage } from './port.js';

const NAMES: Record<Capability, string> = {
  messages: 'this message type',
  templates: 'templates',
  media: 'media',
  flows: 'flows',
  number_limits: "the number's messaging limit and throughput",
  calls: 'calls',
  thread_control: 'thread control',
  groups: 'groups',
  typing: 'the typing indicator',
  coexistence: "the channel's own app beside the API",
};

export function unsupported(channel: ChannelPort, capability: string, what: string): ApiError {
  return new ApiError('unsupported_by_channel', `This project's channel (${channel.kind}) does not offer ${what}.`, { capability, channel_kind: channel.kind });
}

/** The capability, or 409 `unsupported_by_channel` when the channel does not declare it. */
export function capability<C extends Exclude<Capability, 'messages' | 'coexistence'>>(channel: ChannelPort, name: C): ChannelCapabilities[C] {
  const offered = channel.capabilities[name];
  if (!offered) throw unsupported(channel, name, NAMES[name]);
  return offered;
}

export const offers = (channel: ChannelPort, name: Capability): boolean => channel.capabilities[name] !== undefined;

/** Refuses an outbound message of a type the channel does not carry (a template needs `templates` too). */
export function assertCarries(channel: ChannelPort, type: OutboundMessage['type']): void {
  if (type === 'text') return;
  if (!channel.capabilities.messages?.has(type)) throw unsupported(channel, `messages.${type}`, `${type} messages`);
  if (type === 'template') capability(channel, 'templates');
}
