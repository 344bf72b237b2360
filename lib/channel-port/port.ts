/**
 * The channel port: every operation the domain asks of a messaging channel, in the domain's terms.
 * `Deps.channel` is one; the WhatsApp Cloud API client (channel/cloud-api.ts) is its adapter in
 * production, an in-memory one (tests/support/memory-channel.ts) proves the domain needs no other.
 * A failure is a ChannelError (./errors.ts) whose reasons the domain decides on; what the channel
 * tells us arrives as ChannelEvents (./events.ts), read from its notifications by `parseNotification`.
 *
 * A new operation is a method here, implemented by each adapter; nothing in lib/ imports an adapter.
 */
import type { Readable } from 'node:stream';
import type { ChannelEvent } from './events.js';
import type { ContentType, OutboundMessage, SendResult, SendRoute } from './messages.js';
import type { MessagingLimit, Throughput } from './number.js';

export type * from './messages.js';
export type * from './number.js';

/** A project's account at the channel: its number, its business account, its app and its token. */
export interface ChannelCredentials {
  phoneNumberId: string;
  wabaId: string;
  appId: string;
  accessToken: string;
}

// ---------------------------------------------------------------------------------------------
// Templates

/** Template components as created (upper-case types), e.g. { type: 'BODY', text, example }. */
export type TemplateDefinitionComponent = Record<string, unknown> & { type: string };

export interface CreateTemplateInput {
  name: string;
  language: string;
  category: 'MARKETING' | 'UTILITY' | 'AUTHENTICATION' | string;
  components: TemplateDefinitionComponent[];
  parameter_format?: 'POSITIONAL' | 'NAMED';
  allow_category_change?: boolean;
}

export interface CreateTemplateResult {
  id: string;
  status: string;
  category: string;
}

/** A template as the channel lists it. */
export interface ChannelTemplate {
  id: string;
  name: string;
  language: string;
  status: string;
  category: string;
  components?: TemplateDefinitionComponent[];
  rejected_reason?: string;
  parameter_format?: string;
  [key: string]: unknown;
}

export interface ListTemplatesInput {
  /** The channel may match names partially; filter exactly on the result when needed. */
  name?: string;
  status?: string;
  language?: string;
  /** Most templates returned (pages are followed). Default 100, at most 5000. */
  limit?: number;
}

// ---------------------------------------------------------------------------------------------
// Media

export interface UploadMediaInput {
  data: Buffer | Readable;
  mimeType: string;
  filename: string;
  /** Byte length of a stream (gives a Content-Length; checked). Ignored for a Buffer. */
  size?: number;
}

export interface MediaInfo {
  id: string;
  /** Download URL; short-lived and needs the same credentials. */
  url: string;
  mime_type: string;
  sha256: string;
  file_size: number;
}

/** A media file's bytes as the channel serves them (downloadMedia). */
export interface MediaDownload {
  data: Readable;
  mimeType: string;
  /** The length the channel declared; null when it gave none. */
  size: number | null;
}

export interface UploadSessionInput {
  fileName: string;
  fileLength: number;
  /** application/pdf, image/jpeg, image/jpg, image/png or video/mp4 */
  fileType: string;
}

export type UploadChunkResult =
  /** The upload is complete; `handle` serves as a template header example. */
  | { handle: string; fileOffset?: undefined }
  /** More bytes are expected from `fileOffset`. */
  | { handle?: undefined; fileOffset: number };

export interface HeaderSampleInput {
  data: Buffer | Readable;
  fileName: string;
  fileType: string;
  /** Required for a stream; a Buffer's length otherwise. */
  fileLength?: number;
}

// ---------------------------------------------------------------------------------------------
// Flows

/** One problem the channel found in a flow's definition, as it gave it. */
export interface FlowValidationError {
  error: string;
  error_type: string;
  message: string;
  line_start?: number;
  line_end?: number;
  column_start?: number;
  column_end?: number;
  pointers?: unknown[];
  [key: string]: unknown;
}

export interface ChannelFlow {
  id: string;
  name?: string;
  status?: string;
  categories?: string[];
  validation_errors?: FlowValidationError[];
  json_version?: string;
  preview?: { preview_url?: string; expires_at?: string };
  [key: string]: unknown;
}

// ---------------------------------------------------------------------------------------------
// Calls (docs/calls.md): signalling only, no media passes through the service.

/** What the business does with a call: `connect` starts one (with an SDP offer), the others act on `callId`. */
export type CallActionInput =
  | { action: 'connect'; to: string; sdp: string; reference?: string }
  | { action: 'pre_accept' | 'accept'; callId: string; to: string; sdp: string }
  | { action: 'reject' | 'terminate'; callId: string; to?: string };
// Thread control

export interface ThreadControlInput {
  /** The customer: a phone (digits) or a business-scoped user id. */
  to: { phone: string } | { userId: string };
  action: 'pass' | 'take' | 'release';
  /** The app the thread is passed to (pass only). */
  targetAppId?: string;
  /** Passed on to the other app, at most 2,000 characters. */
  metadata?: string;
}

// ---------------------------------------------------------------------------------------------
// Groups (docs/groups.md): created by the business, joined by invite link only.

export interface CreateGroupInput {
  subject: string;
  description?: string;
  joinApprovalMode: 'approval_required' | 'auto_approve';
}

/** A change of a group's settings: each field only when it changes (an empty description clears it). */
export interface GroupSettingsInput {
  subject?: string;
  description?: string;
}

/** An open request to join a group (approval_required groups). */
export interface GroupJoinRequest {
  id: string;
  /** The user's WhatsApp id (phone digits). */
  waId: string;
  /** Seconds since the epoch, when given. */
  createdAt?: number;
}

// ---------------------------------------------------------------------------------------------

/** Templates: created, listed and deleted at the channel, with their media header samples. */
export interface TemplatesCapability {
  createTemplate(creds: ChannelCredentials, input: CreateTemplateInput): Promise<CreateTemplateResult>;
  listTemplates(creds: ChannelCredentials, input?: ListTemplatesInput): Promise<ChannelTemplate[]>;
  deleteTemplate(creds: ChannelCredentials, input: { name: string; hsmId?: string }): Promise<void>;
  /** Uploads a template's media header example; the handle goes in the template's example. */
  uploadHeaderSample(creds: ChannelCredentials, input: HeaderSampleInput): Promise<{ handle: string }>;
}

/** Media kept at the channel: uploaded to be sent by id, read (a customer's photo) and deleted. */
export interface MediaCapability {
  uploadMedia(creds: ChannelCredentials, input: UploadMediaInput): Promise<{ id: string }>;
  getMedia(creds: ChannelCredentials, mediaId: string): Promise<MediaInfo>;
  /**
   * The bytes behind getMedia's `url` (short-lived; it needs the same credentials), streamed;
   * refused past `maxBytes`. Only the service fetches it: a browser never sees the channel's URL.
   */
  downloadMedia(creds: ChannelCredentials, url: string, maxBytes: number): Promise<MediaDownload>;
  deleteMedia(creds: ChannelCredentials, mediaId: string): Promise<void>;
}

export interface FlowsCapability {
  createFlow(creds: ChannelCredentials, input: { name: string; categories: string[] }): Promise<{ id: string }>;
  /** Uploads a flow's definition; the channel's validation errors (empty when none). */
  uploadFlowJson(creds: ChannelCredentials, flowId: string, json: string): Promise<{ validationErrors: FlowValidationError[] }>;
  getFlow(creds: ChannelCredentials, flowId: string): Promise<ChannelFlow>;
  publishFlow(creds: ChannelCredentials, flowId: string): Promise<void>;
  deprecateFlow(creds: ChannelCredentials, flowId: string): Promise<void>;
}

/** The number's limits as the channel states them. */
export interface NumberLimitsCapability {
  getMessagingLimit(creds: ChannelCredentials): Promise<MessagingLimit>;
  getThroughput(creds: ChannelCredentials): Promise<Throughput>;
}

export interface CallsCapability {
  /** Acts on a call; `connect` answers the new call's id. */
  callAction(creds: ChannelCredentials, input: CallActionInput): Promise<{ callId?: string }>;
}

/** Another app on the number (e.g. Meta's Business Agent) may hold a thread (docs/coexistence.md). */
export interface ThreadControlCapability {
  /** Passes the customer's thread to `targetAppId`, takes it, or releases it. */
  threadControl(creds: ChannelCredentials, input: ThreadControlInput): Promise<void>;
}

export interface GroupsCapability {
  /** Asks the channel to create a group; the group's id comes with its group_lifecycle_update, matched by `requestId`. */
  createGroup(creds: ChannelCredentials, input: CreateGroupInput): Promise<{ requestId: string }>;
  /** A new invite link for the group (the old one stops working). */
  createGroupInviteLink(creds: ChannelCredentials, groupId: string): Promise<{ inviteLink: string }>;
  /** Removes participants (WhatsApp ids or phones, at most 8); the change comes back as a group_participants event. */
  removeGroupParticipants(creds: ChannelCredentials, groupId: string, participants: string[]): Promise<void>;
  listGroupJoinRequests(creds: ChannelCredentials, groupId: string): Promise<GroupJoinRequest[]>;
  /** Approves join requests; the channel answers which it approved and which failed. */
  approveGroupJoinRequests(creds: ChannelCredentials, groupId: string, ids: string[]): Promise<{ approved: string[]; failed: string[] }>;
  /** Rejects join requests; the channel answers which it rejected and which failed. */
  rejectGroupJoinRequests(creds: ChannelCredentials, groupId: string, ids: string[]): Promise<{ rejected: string[]; failed: string[] }>;
  /** Changes the group's subject and/or description; the change comes back as a group_settings event. */
  updateGroupSettings(creds: ChannelCredentials, groupId: string, input: GroupSettingsInput): Promise<void>;
  /** Deletes the group (every participant, the business included, leaves); a group_lifecycle `deleted` event follows. */
  deleteGroup(creds: ChannelCredentials, groupId: string): Promise<void>;
}

/** The business shown typing while it answers (cleared by the reply, or after a while). */
export interface TypingCapability {
  /** Marks the customer's message read and shows the business typing. */
  showTyping(creds: ChannelCredentials, channelMessageId: string): Promise<void>;
}

/**
 * What a channel may offer beyond its core, each declared by the adapter that has it. `messages`
 * names the outbound types beyond `text` it carries (a template send also needs `templates`);
 * `coexistence` says the number may also be used from the channel's own app (its echoes and
 * history arrive as events). The domain asks with `capability()` (./capabilities.ts), which refuses
 * what the project's channel lacks with 409 `unsupported_by_channel`.
 */
export interface ChannelCapabilities {
  messages: ReadonlySet<Exclude<ContentType, 'text'>>;
  templates: TemplatesCapability;
  media: MediaCapability;
  flows: FlowsCapability;
  number_limits: NumberLimitsCapability;
  calls: CallsCapability;
  thread_control: ThreadControlCapability;
  groups: GroupsCapability;
  typing: TypingCapability;
  coexistence: true;
}
export type Capability = keyof ChannelCapabilities;

/**
 * The core every channel has: send a text (and whatever else `capabilities.messages` names), mark
 * a received message read, and read its notifications into events.
 */
export interface ChannelPort {
  /** The channel's kind, e.g. `whatsapp_cloud` (shown in refusals and logs). */
  readonly kind: string;
  readonly capabilities: Partial<ChannelCapabilities>;

  sendMessage(creds: ChannelCredentials, message: OutboundMessage, route?: SendRoute): Promise<SendResult>;
  /** Marks a received message read. */
  markRead(creds: ChannelCredentials, channelMessageId: string): Promise<void>;

  /** The events of one notification the channel posted, those addressed to `phoneNumberId`. Malformed parts are skipped. */
  parseNotification(payload: unknown, phoneNumberId: string): ChannelEvent[];

  /** Releases the adapter's connections (at shutdown). */
  close?(): void | Promise<void>;
}
