/**
 * WhatsApp Cloud API client, the channel port's adapter (lib/channel-port/port.ts): every upstream
 * call the service makes goes through here (Meta's Graph API in production, the simulator in
 * development and tests). The transport (deadlines, error mapping, secrets kept out of logs) is
 * graph-transport.ts; each Graph area has its module: messages.ts, templates.ts, media.ts,
 * phone-numbers.ts and flows.ts; Meta's webhook notifications are read into the port's events by
 * notifications.ts.
 */
import { GraphTransport, type CallSpec, type ChannelCredentials } from './graph-transport.js';
import type { ChannelError, ChannelOperation } from './errors.js';
import * as messages from './messages.js';
import * as templates from './templates.js';
import * as media from './media.js';
import * as phoneNumbers from './phone-numbers.js';
import * as flows from './flows.js';
import * as calls from './calls.js';
import * as groups from './groups.js';
import { notificationEvents } from './notifications.js';
import type { ChannelCapabilities, ChannelPort } from '../lib/channel-port/port.js';
import type { ChannelEvent } from '../lib/channel-port/events.js';

export type { ChannelCredentials, CloudApiClientOptions } from './graph-transport.js';
export type * from './messages.js';
export type * from './templates.js';
export type * from './media.js';
export type * from './phone-numbers.js';

/** Every outbound type the Cloud API carries beyond text. */
const MESSAGE_TYPES = new Set(['template', 'image', 'video', 'document', 'audio', 'sticker', 'interactive'] as const);

export class CloudApiClient extends GraphTransport implements ChannelPort {
  readonly kind = 'whatsapp_cloud';
  /** WhatsApp's Cloud API offers every capability the port names. */
  readonly capabilities: Required<ChannelCapabilities> = {
    messages: MESSAGE_TYPES, templates: this, media: this, flows: this, number_limits: this, calls: this,
    thread_control: this, groups: this, typing: this, coexistence: true,
  };

  sendMessage(...a: Parameters<typeof messages.sendMessage>) {
    return messages.sendMessage.apply(this, a);
  }
  markRead(creds: ChannelCredentials, messageId: string) {
    return messages.markRead.call(this, creds, messageId);
  }
  showTyping(creds: ChannelCredentials, messageId: string) {
    return messages.markRead.call(this, creds, messageId, { typing: true });
  }
  threadControl(...a: Parameters<typeof messages.threadControl>) {
    return messages.threadControl.apply(this, a);
  }
  getMessagingLimit(...a: Parameters<typeof phoneNumbers.getMessagingLimit>) {
    return phoneNumbers.getMessagingLimit.apply(this, a);
  }
  getThroughput(...a: Parameters<typeof phoneNumbers.getThroughput>) {
    return phoneNumbers.getThroughput.apply(this, a);
  }

  createTemplate(...a: Parameters<typeof templates.createTemplate>) {
    return templates.createTemplate.apply(this, a);
  }
  listTemplates(...a: Parameters<typeof templates.listTemplates>) {
    return templates.listTemplates.apply(this, a);
  }
  deleteTemplate(...a: Parameters<typeof templates.deleteTemplate>) {
    return templates.deleteTemplate.apply(this, a);
  }

  uploadMedia(...a: Parameters<typeof media.uploadMedia>) {
    return media.uploadMedia.apply(this, a);
  }
  getMedia(...a: Parameters<typeof media.getMedia>) {
    return media.getMedia.apply(this, a);
  }

  downloadMedia(...a: Parameters<typeof media.downloadMedia>) {
    return media.downloadMedia.apply(this, a);
  }
  deleteMedia(...a: Parameters<typeof media.deleteMedia>) {
    return media.deleteMedia.apply(this, a);
  }
  createUploadSession(...a: Parameters<typeof media.createUploadSession>) {
    return media.createUploadSession.apply(this, a);
  }
  uploadToSession(...a: Parameters<typeof media.uploadToSession>) {
    return media.uploadToSession.apply(this, a);
  }
  uploadHeaderSample(...a: Parameters<typeof media.uploadHeaderSample>) {
    return media.uploadHeaderSample.apply(this, a);
  }

  createFlow(creds: ChannelCredentials, input: { name: string; categories: string[] }) {
    return flows.createFlow(this, creds, input);
  }
  uploadFlowJson(creds: ChannelCredentials, flowId: string, json: string) {
    return flows.uploadFlowJson(this, creds, flowId, json);
  }
  getFlow(creds: ChannelCredentials, flowId: string) {
    return flows.getFlow(this, creds, flowId);
  }
  publishFlow(creds: ChannelCredentials, flowId: string) {
    return flows.publishFlow(this, creds, flowId);
  }
  deprecateFlow(creds: ChannelCredentials, flowId: string) {
    return flows.deprecateFlow(this, creds, flowId);
  }

  callAction(...a: Parameters<typeof calls.callAction>) {
    return calls.callAction.apply(this, a);
  }

  createGroup(...a: Parameters<typeof groups.createGroup>) {
    return groups.createGroup.apply(this, a);
  }
  createGroupInviteLink(...a: Parameters<typeof groups.createGroupInviteLink>) {
    return groups.createGroupInviteLink.apply(this, a);
  }
  removeGroupParticipants(...a: Parameters<typeof groups.removeGroupParticipants>) {
    return groups.removeGroupParticipants.apply(this, a);
  }
  listGroupJoinRequests(...a: Parameters<typeof groups.listGroupJoinRequests>) {
    return groups.listGroupJoinRequests.apply(this, a);
  }
  approveGroupJoinRequests(...a: Parameters<typeof groups.approveGroupJoinRequests>) {
    return groups.approveGroupJoinRequests.apply(this, a);
  }
  rejectGroupJoinRequests(...a: Parameters<typeof groups.rejectGroupJoinRequests>) {
    return groups.rejectGroupJoinRequests.apply(this, a);
  }
  updateGroupSettings(...a: Parameters<typeof groups.updateGroupSettings>) {
    return groups.updateGroupSettings.apply(this, a);
  }
  deleteGroup(...a: Parameters<typeof groups.deleteGroup>) {
    return groups.deleteGroup.apply(this, a);
  }

  parseNotification(payload: unknown, phoneNumberId: string): ChannelEvent[] {
    return notificationEvents(payload, phoneNumberId);
  }

  /**
   * One Graph call for the area clients beside this file (channel/flows.ts): same deadline,
   * token handling and error mapping as every call here.
   */
  graph(creds: ChannelCredentials, spec: CallSpec): Promise<unknown> {
    return this.call(creds, spec);
  }

  /** The "unexpected answer" error of this client, for area clients. */
  unexpectedAnswer(op: ChannelOperation, why: string): ChannelError {
    return this.unexpected(op, why);
  }
}
