/**
 * The domain's one question to a project's channel: which adapter serves it (its kind), and what
 * it can do. A capability the project's channel lacks is refused before anything is stored or
 * sent: 409 `unsupported_by_channel`, naming it.
 */
import { ApiError } from '../platform/errors.js';
import type { Capability, ChannelCapabilities, ChannelPort, ContentType } from './port.js';

/** The kind of a project's channel unless its settings say otherwise. */
export const DEFAULT_CHANNEL_KIND = 'whatsapp_cloud';

/** The adapters an instance serves: `channel` for the default kind, `channels` for the others by kind. */
export interface ChannelPorts {
  channel: ChannelPort;
  channels?: Readonly<Record<string, ChannelPort>>;
}

export const servedKinds = (ports: ChannelPorts): string[] => [DEFAULT_CHANNEL_KIND, ...Object.keys(ports.channels ?? {}).filter((k) => k !== DEFAULT_CHANNEL_KIND)];

/** The adapter of a project's channel; a kind this instance does not serve is a channel not configured here. */
export function portOf(ports: ChannelPorts, channel: { kind: string }): ChannelPort {
  const port = ports.channels?.[channel.kind] ?? (channel.kind === DEFAULT_CHANNEL_KIND ? ports.channel : undefined);
  if (!port) throw new ApiError('channel_not_configured', `This project's channel is of kind ${channel.kind}, which this instance does not serve.`, { channel_kind: channel.kind });
  return port;
}

/** The capabilities the domain asks for by name (message types and coexistence are asked otherwise). */
type Asked = Exclude<Capability, 'messages' | 'coexistence'>;

const NAMES: Record<Asked, string> = {
  templates: 'templates',
  media: 'media',
  flows: 'flows',
  number_limits: "the number's messaging limit and throughput",
  calls: 'calls',
  thread_control: 'thread control',
  groups: 'groups',
  typing: 'the typing indicator',
};

function unsupported(channel: { kind: string }, capability: string, what: string): ApiError {
  return new ApiError('unsupported_by_channel', `This project's channel (${channel.kind}) does not offer ${what}.`, { capability, channel_kind: channel.kind });
}

/** The capability of the project's channel, or 409 `unsupported_by_channel` when it does not declare it. */
export function capability<C extends Asked>(ports: ChannelPorts, channel: { kind: string }, name: C): ChannelCapabilities[C] {
  const offered = portOf(ports, channel).capabilities[name];
  if (!offered) throw unsupported(channel, name, NAMES[name]);
  return offered;
}

/** Whether the project's channel declares the capability (background work skips a channel without it). */
export const offers = (ports: ChannelPorts, channel: { kind: string }, name: Capability): boolean => portOf(ports, channel).capabilities[name] !== undefined;

/** Refuses an outbound message of a type the project's channel does not carry (a template needs `templates` too). */
export function assertCarries(ports: ChannelPorts, channel: { kind: string }, type: ContentType): void {
  if (type === 'text') return;
  if (!portOf(ports, channel).capabilities.messages?.has(type)) throw unsupported(channel, `messages.${type}`, `${type} messages`);
  if (type === 'template') capability(ports, channel, 'templates');
}
