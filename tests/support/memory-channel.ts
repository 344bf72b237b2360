/**
 * A channel port (lib/channel-port/port.ts) in memory, beside the simulator: what it was asked is
 * kept for the test to read, and its notifications are the port's events themselves
 * (`{ phone_number_id, events }`), so a test proves the domain runs on an adapter that is not the
 * Cloud API's. Templates are kept by name and language; media by id; flows answer without findings.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { ChannelError } from '../../lib/channel-port/errors.js';
import type { ChannelEvent } from '../../lib/channel-port/events.js';
import type {
  ChannelCapabilities, ChannelCredentials, ChannelFlow, ChannelPort, ChannelTemplate, CreateTemplateInput, CreateTemplateResult, FlowValidationError,
  CallActionInput, CreateGroupInput, GroupJoinRequest, GroupSettingsInput, ThreadControlInput, HeaderSampleInput, ListTemplatesInput, MediaDownload, MediaInfo, MessagingLimit, OutboundMessage, SendResult, SendRoute, Throughput, UploadMediaInput,
} from '../../lib/channel-port/port.js';

const id = (prefix: string) => `${prefix}.${randomBytes(8).toString('hex')}`;

export interface MemorySend {
  phoneNumberId: string;
  message: OutboundMessage;
  route: SendRoute;
  channelMessageId: string;
}

export class MemoryChannel implements ChannelPort {
  readonly kind = 'memory';
  readonly capabilities: Required<ChannelCapabilities> = {
    messages: new Set(['template', 'image', 'video', 'document', 'audio', 'sticker', 'interactive'] as const),
    templates: this, media: this, flows: this, number_limits: this, calls: this, thread_control: this, groups: this, coexistence: true,
    typing: { showTyping: (creds, channelMessageId) => this.markRead(creds, channelMessageId) },
  };
  readonly sent: MemorySend[] = [];
  readonly read: string[] = [];
  readonly templates = new Map<string, ChannelTemplate>();
  readonly media = new Map<string, { mimeType: string }>();
  readonly callActions: CallActionInput[] = [];
  /** The next sends refuse with this error (then it is cleared). */
  refuseNext?: ChannelError;

  async sendMessage(creds: ChannelCredentials, message: OutboundMessage, route: SendRoute = { kind: 'cloud_api' }): Promise<SendResult> {
    if (this.refuseNext) {
      const e = this.refuseNext;
      this.refuseNext = undefined;
      throw e;
    }
    const channelMessageId = id('mem');
    this.sent.push({ phoneNumberId: creds.phoneNumberId, message, route, channelMessageId });
    return { channelMessageId };
  }

  async markRead(_creds: ChannelCredentials, channelMessageId: string): Promise<void> {
    this.read.push(channelMessageId);
  }

  async createTemplate(_creds: ChannelCredentials, input: CreateTemplateInput): Promise<CreateTemplateResult> {
    const key = `${input.name}/${input.language}`;
    if (this.templates.has(key)) {
      throw new ChannelError({ kind: 'rejected', retryable: false, operation: 'createTemplate', httpStatus: 400, message: 'template exists', reasons: ['template_exists'] });
    }
    const t: ChannelTemplate = { id: id('tpl'), name: input.name, language: input.language, status: 'PENDING', category: String(input.category), components: input.components };
    this.templates.set(key, t);
    return { id: t.id, status: t.status, category: t.category };
  }

  async listTemplates(_creds: ChannelCredentials, input: ListTemplatesInput = {}): Promise<ChannelTemplate[]> {
    return [...this.templates.values()].filter((t) => (!input.name || t.name === input.name) && (!input.language || t.language === input.language));
  }

  async deleteTemplate(_creds: ChannelCredentials, input: { name: string; hsmId?: string }): Promise<void> {
    for (const [key, t] of this.templates) if (t.name === input.name && (!input.hsmId || t.id === input.hsmId)) this.templates.delete(key);
  }

  async uploadMedia(_creds: ChannelCredentials, input: UploadMediaInput): Promise<{ id: string }> {
    const mediaId = id('media');
    if (!Buffer.isBuffer(input.data)) for await (const _ of input.data) void _;
    this.media.set(mediaId, { mimeType: input.mimeType });
    return { id: mediaId };
  }

  async getMedia(_creds: ChannelCredentials, mediaId: string): Promise<MediaInfo> {
    const m = this.media.get(mediaId);
    if (!m) throw new ChannelError({ kind: 'rejected', retryable: false, operation: 'getMedia', httpStatus: 404, message: 'no such media' });
    return { id: mediaId, url: `memory://${mediaId}`, mime_type: m.mimeType, sha256: '', file_size: 0 };
  }

  async downloadMedia(_creds: ChannelCredentials, url: string): Promise<MediaDownload> {
    const m = this.media.get(url.replace(/^memory:\/\//, ''));
    if (!m) throw new ChannelError({ kind: 'rejected', retryable: false, operation: 'downloadMedia', httpStatus: 404, message: 'no such media' });
    return { data: Readable.from([Buffer.alloc(0)]), mimeType: m.mimeType, size: 0 };
  }

  async deleteMedia(_creds: ChannelCredentials, mediaId: string): Promise<void> {
    this.media.delete(mediaId);
  }

  async uploadHeaderSample(_creds: ChannelCredentials, _input: HeaderSampleInput): Promise<{ handle: string }> {
    return { handle: id('handle') };
  }

  async createFlow(): Promise<{ id: string }> {
    return { id: id('flow') };
  }

  async uploadFlowJson(): Promise<{ validationErrors: FlowValidationError[] }> {
    return { validationErrors: [] };
  }

  async getFlow(_creds: ChannelCredentials, flowId: string): Promise<ChannelFlow> {
    return { id: flowId, status: 'DRAFT', validation_errors: [] };
  }

  async publishFlow(): Promise<void> {}

  async deprecateFlow(): Promise<void> {}

  /** Thread control calls, in order; `holders` keeps who holds each customer's thread (absent: us). */
  readonly threadCalls: ThreadControlInput[] = [];
  readonly holders = new Map<string, string>();

  async threadControl(_creds: ChannelCredentials, input: ThreadControlInput): Promise<void> {
    this.threadCalls.push(input);
    const who = 'phone' in input.to ? input.to.phone : input.to.userId;
    if (input.action === 'pass') this.holders.set(who, input.targetAppId ?? '');
    else this.holders.delete(who);
  }

  async getMessagingLimit(): Promise<MessagingLimit> {
    return { tier: 'TIER_2K', limit: 2000 };
  }

  async getThroughput(): Promise<Throughput> {
    return { level: 'STANDARD', coexistence: false, messagesPerSecond: 80 };
  }

  /** Runs before a call action is answered (a channel whose notification overtakes its answer). */
  beforeCallAnswer?: (input: CallActionInput) => Promise<void>;

  async callAction(_creds: ChannelCredentials, input: CallActionInput): Promise<{ callId?: string }> {
    this.callActions.push(input);
    await this.beforeCallAnswer?.(input);
    return input.action === 'connect' ? { callId: id('call') } : {};
  }

  /** Groups asked for (by request id), invite links given, removals, open join requests per group id, settings changes, deletions. */
  readonly groupsCreated = new Map<string, CreateGroupInput>();
  readonly inviteLinks: string[] = [];
  readonly removals: Array<{ groupId: string; participants: string[] }> = [];
  readonly joinRequests = new Map<string, GroupJoinRequest[]>();
  readonly settingsChanges: Array<{ groupId: string; input: GroupSettingsInput }> = [];
  readonly groupsDeleted: string[] = [];

  /** The request id the next creation is answered with (a test naming it before); else a new one. */
  nextRequestId?: string;

  async createGroup(_creds: ChannelCredentials, input: CreateGroupInput): Promise<{ requestId: string }> {
    const requestId = this.nextRequestId ?? id('req');
    this.nextRequestId = undefined;
    this.groupsCreated.set(requestId, input);
    return { requestId };
  }

  async createGroupInviteLink(): Promise<{ inviteLink: string }> {
    const link = `https://chat.whatsapp.com/${randomBytes(8).toString('hex')}`;
    this.inviteLinks.push(link);
    return { inviteLink: link };
  }

  async removeGroupParticipants(_creds: ChannelCredentials, groupId: string, participants: string[]): Promise<void> {
    this.removals.push({ groupId, participants });
  }

  async listGroupJoinRequests(_creds: ChannelCredentials, groupId: string): Promise<GroupJoinRequest[]> {
    return this.joinRequests.get(groupId) ?? [];
  }

  async approveGroupJoinRequests(_creds: ChannelCredentials, groupId: string, ids: string[]): Promise<{ approved: string[]; failed: string[] }> {
    const open = this.joinRequests.get(groupId) ?? [];
    const approved = ids.filter((i) => open.some((r) => r.id === i));
    this.joinRequests.set(groupId, open.filter((r) => !approved.includes(r.id)));
    return { approved, failed: ids.filter((i) => !approved.includes(i)) };
  }

  async rejectGroupJoinRequests(_creds: ChannelCredentials, groupId: string, ids: string[]): Promise<{ rejected: string[]; failed: string[] }> {
    const open = this.joinRequests.get(groupId) ?? [];
    const rejected = ids.filter((i) => open.some((r) => r.id === i));
    this.joinRequests.set(groupId, open.filter((r) => !rejected.includes(r.id)));
    return { rejected, failed: ids.filter((i) => !rejected.includes(i)) };
  }

  async updateGroupSettings(_creds: ChannelCredentials, groupId: string, input: GroupSettingsInput): Promise<void> {
    this.settingsChanges.push({ groupId, input });
  }

  async deleteGroup(_creds: ChannelCredentials, groupId: string): Promise<void> {
    this.groupsDeleted.push(groupId);
  }

  /** This channel's notification: `{ phone_number_id, events }`, the port's events as they are. */
  parseNotification(payload: unknown, phoneNumberId: string): ChannelEvent[] {
    const p = payload as { phone_number_id?: unknown; events?: unknown } | null;
    if (p?.phone_number_id !== phoneNumberId || !Array.isArray(p.events)) return [];
    return p.events as ChannelEvent[];
  }
}
