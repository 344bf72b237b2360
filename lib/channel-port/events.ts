/**
 * What a channel tells us, in the domain's terms: one event per thing that happened, a union on
 * `kind`. The adapter reads its provider's notifications into these (channel/notifications.ts for
 * the Cloud API); lib/messaging/inbound.ts applies them.
 *
 * A new kind of event (a call, a group change, an echo of a message sent from another app, a
 * history sync, a handover) is a new member here, produced by the adapter that knows it and applied
 * by the room it concerns; an adapter that never sees it never produces it.
 */
import type { MessagingLimit } from './number.js';

/** What the channel says about a customer: each field only when given (phone digits only). */
export interface Customer {
  phone?: string;
  /** The channel's user id of the customer (WhatsApp's business-scoped user id). */
  userId?: string;
  parentUserId?: string;
  username?: string;
  profileName?: string;
}

/** A customer sent us a message. */
export interface MessageEvent {
  kind: 'message';
  /** The channel's id of the message: storing it once makes the channel's retries harmless. */
  channelMessageId: string;
  customer: Customer;
  /** text, image, interactive, system, … as the channel names it. */
  type: string;
  /** When the customer sent it, in seconds since the epoch as the channel gave it. */
  timestamp?: string;
  /** What the message carries, stored and shown as it came (with its `type` and the fields it names). */
  content: Record<string, unknown>;
  /** The channel's id of the group the customer wrote in (docs/groups.md); absent for a one-to-one message. */
  groupId?: string;
}

/** A message we sent moved: sent, delivered, read, failed, … */
export interface StatusEvent {
  kind: 'status';
  channelMessageId: string;
  status: string;
  /** Seconds since the epoch, as the channel gave it. */
  timestamp?: string;
  /** What the status says about the recipient. */
  customer?: Customer;
  /** A failed status's errors, as the channel gave them (the first is stored with the message). */
  errors?: unknown[];
  /** What the send carried as its reference, echoed (lib/messaging/send-message.ts). */
  reference?: string;
  /** The channel's pricing of the message, as given (lib/pricing/status-pricing.ts reads it). */
  pricing?: unknown;
  /** The recipient had stopped marketing messages (the failure says so): the contact opts out. */
  recipientOptedOut?: boolean;
  /** The channel's id of the group the message was sent to (then `customer` is absent). */
  groupId?: string;
}

/** A customer stopped or resumed a category of messages (e.g. marketing) at the channel. */
export interface UserPreferenceEvent {
  kind: 'user_preference';
  customer: Customer;
  category: string;
  /** `stop` or `resume`. */
  value: string;
  timestamp?: number;
}

/** The channel decided on a template (APPROVED, REJECTED, PAUSED, …). */
export interface TemplateStatusEvent {
  kind: 'template_status';
  /** The channel's id of the template, when given. */
  templateId?: string;
  name: string;
  language: string;
  /** Upper case. */
  status: string;
  reason?: string;
}

/** The account's messaging limit changed (shared by all its numbers). */
export interface MessagingLimitEvent {
  kind: 'messaging_limit';
  limit: MessagingLimit;
}

/** The number's throughput may have changed: read it again from the channel (getThroughput). */
export interface ThroughputEvent {
  kind: 'throughput';
  /** What announced it, for the log (e.g. `phone_number_quality_update THROUGHPUT_UPGRADE`). */
  why: string;
}

/**
 * A voice call moved (docs/calls.md): a customer calls (`connect`, with the caller's SDP offer), a
 * business-initiated call rings, is accepted or rejected (`status`), or the call ended
 * (`terminate`, COMPLETED or FAILED, with its duration). The channel's call id keys it.
 */
export interface CallEvent {
  kind: 'call';
  callId: string;
  customer: Customer;
  /** `connect`, `terminate`, or `status` (a business-initiated call's RINGING, ACCEPTED, REJECTED). */
  event: 'connect' | 'terminate' | 'status';
  direction: 'user_initiated' | 'business_initiated';
  /** The channel's word, upper case: COMPLETED or FAILED on terminate; RINGING, ACCEPTED, REJECTED on status. */
  status?: string;
  /** The other side's session description (the caller's offer on connect). */
  sdp?: { type: string; sdp: string };
  /** Seconds since the epoch, as given. */
  timestamp?: string;
  startTime?: string;
  endTime?: string;
  durationSeconds?: number;
  /** What the business passed with its call, echoed. */
  reference?: string;
}

/** The customer answered a call permission request: `granted` or `denied`, until `expiresAt` (seconds). */
export interface CallPermissionEvent {
  kind: 'call_permission';
  customer: Customer;
  status: 'granted' | 'denied';
  permanent: boolean;
  expiresAt?: number;
}

/**
 * A message the business sent from another app on the same number (coexistence: the WhatsApp
 * Business app): a person replied, so the bot stays quiet in that conversation.
 */
export interface MessageEchoEvent {
  kind: 'message_echo';
  channelMessageId: string;
  /** The customer it was sent to. */
  customer: Customer;
  type: string;
  timestamp?: string;
  content: Record<string, unknown>;
}

/** One past message the channel shared (coexistence's history sync), either way. */
export interface HistoryEvent {
  kind: 'history';
  channelMessageId: string;
  direction: 'inbound' | 'outbound';
  customer: Customer;
  type: string;
  timestamp?: string;
  content: Record<string, unknown>;
  /** Its delivery status as the history gives it, lower case (delivered, read, sent, played, error, pending). */
  status?: string;
}

/** The Business app's address book changed a contact's name (coexistence's state sync). */
export interface ContactSyncEvent {
  kind: 'contact_sync';
  customer: Customer;
  /** `add` (or an edit) or `remove`. */
  action: string;
  fullName?: string;
  firstName?: string;
}

/** A customer wrote while another app holds the thread: stored, the bot not woken. */
export interface StandbyMessageEvent extends Omit<MessageEvent, 'kind'> {
  kind: 'standby_message';
}

/** Who holds a customer's thread changed (another app passed, took or released it). */
export interface ThreadControlChangedEvent {
  kind: 'thread_control_changed';
  customer: Customer;
  action: 'pass' | 'take' | 'release';
  previousOwnerAppId?: string;
  newOwnerAppId?: string;
  metadata?: string;
  timestamp?: string;
}

/** One participant of a group as the channel names it: the WhatsApp id (phone digits) it gave. */
export interface GroupMember {
  waId: string;
}

/**
 * A group was created (`created`, naming the creation's request id and the group's id) or deleted
 * (the channel's group_lifecycle_update; docs/groups.md).
 */
export interface GroupLifecycleEvent {
  kind: 'group_lifecycle';
  groupId: string;
  change: 'created' | 'deleted';
  /** The request id the creation was answered with (matches the pending group). */
  requestId?: string;
  subject?: string;
  description?: string;
  /** Participants the group was created with, when given. */
  added?: GroupMember[];
  timestamp?: string;
}

/** Participants joined (by the invite link, or approved) or left the group (group_participants_update). */
export interface GroupParticipantsEvent {
  kind: 'group_participants';
  groupId: string;
  added: GroupMember[];
  removed: GroupMember[];
  requestId?: string;
  timestamp?: string;
}

/** The group's subject or description changed (group_settings_update); each field only when given. */
export interface GroupSettingsEvent {
  kind: 'group_settings';
  groupId: string;
  subject?: string;
  description?: string;
  requestId?: string;
  timestamp?: string;
}

/** The channel suspended the group, or lifted the suspension (group_status_update). */
export interface GroupStatusEvent {
  kind: 'group_status';
  groupId: string;
  status: 'suspended' | 'active';
  timestamp?: string;
}

export type ChannelEvent =
  | MessageEvent | StatusEvent | UserPreferenceEvent | TemplateStatusEvent | MessagingLimitEvent | ThroughputEvent
  | CallEvent | CallPermissionEvent
  | MessageEchoEvent | HistoryEvent | ContactSyncEvent | StandbyMessageEvent | ThreadControlChangedEvent
  | GroupLifecycleEvent | GroupParticipantsEvent | GroupSettingsEvent | GroupStatusEvent;
export type ChannelEventKind = ChannelEvent['kind'];
