/** The simulator's in-memory model. Everything is bounded (see the limits in SimLimits). */
import { BoundedMap, Fifo, RingBuffer } from './structures.js';
import { SimUsers } from './user-model.js';

export interface Clock {
  now(): Date;
}

type LogFn = (message: string, meta?: Record<string, unknown>) => void;
/** Winston- or console-compatible; every method optional. */
export interface SimLogger {
  debug?: LogFn;
  info?: LogFn;
  warn?: LogFn;
  error?: LogFn;
}

export interface AutoStatusDelays {
  /** Delay before `sent` (default 0). */
  sent?: number;
  /** Delay after `sent` before `delivered`; null stops progression at `sent`. */
  delivered: number | null;
  /** Delay after `delivered` before `read`; null stops progression at `delivered`. */
  read: number | null;
}

export interface SimLimits {
  messageLogSize: number;
  messageIndexSize: number;
  callbackLogSize: number;
  maxPendingCallbacks: number;
  callbackConcurrency: number;
  /** Automatic statuses for one number raised within this many ms share one notification (0: one each). */
  statusBatchMs: number;
  /** At most this many statuses per notification. */
  statusBatchMax: number;
  callbackTimeoutMs: number;
  callbackRetryDelaysMs: number[];
  maxMediaBytes: number;
  mediaTtlMs: number;
  jsonLimitBytes: number;
  uploadLimitBytes: number;
}

/**
 * Meta retries a callback that failed "with decreasing frequency" for up to 7 days: here 1 s, 5 s,
 * 15 s, 30 s, 1, 2, 5, 10, 20 and 30 minutes, then every hour until 7 days have passed since the
 * first attempt. `scale` compresses the whole schedule for tests (0.001: 7 days in 10 minutes).
 */
export function metaCallbackRetryDelaysMs(scale = 1): number[] {
  const first = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800].map((s) => s * 1000);
  const delays = [...first];
  let total = first.reduce((a, b) => a + b, 0);
  const HOUR = 3600_000;
  while (total + HOUR <= 7 * 24 * HOUR) {
    delays.push(HOUR);
    total += HOUR;
  }
  return delays.map((d) => Math.max(1, Math.round(d * scale)));
}

export const DEFAULT_LIMITS: SimLimits = {
  messageLogSize: 10_000,
  messageIndexSize: 200_000,
  callbackLogSize: 1_000,
  maxPendingCallbacks: 100_000,
  callbackConcurrency: 64,
  statusBatchMs: 20,
  statusBatchMax: 100,
  callbackTimeoutMs: 10_000,
  callbackRetryDelaysMs: metaCallbackRetryDelaysMs(),
  maxMediaBytes: 512 * 1024 * 1024,
  mediaTtlMs: 30 * 24 * 3600 * 1000,
  jsonLimitBytes: 5 * 1024 * 1024,
  uploadLimitBytes: 100 * 1024 * 1024,
};

export interface Verification {
  ok: boolean | null;
  at: string | null;
  status_code: number | null;
  error: string | null;
}

export interface PhoneNumber {
  phone_number_id: string;
  waba_id: string;
  app_id: string;
  access_token: string;
  display_phone_number: string;
  verified_name: string;
  callback_url: string;
  app_secret: string;
  verify_token: string | null;
  enforce_customer_window: boolean;
  verification: Verification;
  lastVerifyAttemptMs: number;
  /** Messages per second this number accepts (wall clock); beyond it, 130429. Absent or null: unlimited. */
  throughput_mps?: number | null;
  /** Meta's throughput level served as `throughput.level` (STANDARD 80/s, HIGH up to 1,000/s); default STANDARD. */
  throughput_level?: 'STANDARD' | 'HIGH';
  /** Also on the WhatsApp Business app (coexistence, `is_on_biz_app`): held at 20/s. */
  coexistence?: boolean;
  /** The throughput bucket: tokens left and when it was last filled (wall-clock ms). */
  bucket?: { tokens: number; at: number };
  /** The portfolio's messaging limit served as `whatsapp_business_manager_messaging_limit` (pricing.ts); default TIER_UNLIMITED. */
  messaging_limit?: string;
  /** Whether the business accepted the Marketing Messages API terms (POST /marketing_messages; false → 131055). Absent: accepted. */
  marketing_messages_terms_accepted?: boolean;
  created_at: string;
}

/** Per-message state kept for status webhooks: small on purpose. */
export interface MessageMeta {
  pnid: string;
  /** The recipient's phone (digits); '' for a send by BSUID to a user whose phone is withheld. */
  to: string;
  /** The recipient's business-scoped user id. */
  userId?: string;
  /** Pricing category: service | marketing | utility | authentication. */
  category: string;
  status: 'accepted' | 'sent' | 'delivered' | 'read' | 'failed';
  convId: string | null;
  /** Set when a manual status or failure ends automatic progression. */
  stop: boolean;
  /** The send's biz_opaque_callback_data, echoed in each of its statuses. */
  opaque?: string;
  /** Pricing type decided at the send (pricing.ts): regular, free_customer_service, free_entry_point. */
  pricingType?: string;
  /** A pricing object the control API set for the next manual status (pricing.ts). */
  pricingOverride?: Record<string, unknown>;
  /** A send to a group (groups.ts): its statuses name the group and stop at delivered. */
  groupId?: string;
}

export interface SentMessage {
  wamid: string;
  phone_number_id: string;
  to: string;
  type: string;
  at: string;
  payload: unknown;
  meta: MessageMeta;
  /** The Graph edge it came through: `messages` (Cloud API) or `marketing_messages` (Marketing Messages API). */
  route?: 'messages' | 'marketing_messages';
  /** The recipient's business-scoped user id, when the simulator knows the user (a reply by `recipient` has no phone). */
  user_id?: string;
}

export interface Template {
  id: string;
  waba_id: string;
  name: string;
  language: string;
  category: string;
  components: Record<string, unknown>[];
  status: 'PENDING' | 'APPROVED' | 'REJECTED' | 'PAUSED' | 'DISABLED';
  rejected_reason: string;
  parameter_format: string;
  created_at: string;
  timer: NodeJS.Timeout | null;
}

export interface Media {
  id: string;
  pnid: string;
  mime_type: string;
  sha256: string;
  size: number;
  data: Buffer | null;
  filename: string | null;
  createdMs: number;
}

export interface UploadSession {
  id: string;
  key: string;
  app_id: string;
  pnid: string;
  file_name: string;
  file_length: number;
  file_type: string;
  offset: number;
  chunks: Buffer[];
  handle: string | null;
}

export interface IssuedHandle {
  pnid: string;
  mime: string;
  size: number;
  expiresMs: number;
  used: boolean;
}

export interface Fault {
  id: number;
  phone_number_id: string | null;
  operation: string | null;
  remaining: number;
  graph_error: { code: number; http_status?: number; message?: string; subcode?: number; details?: string } | null;
  http_status: number | null;
  latency_ms: number;
  timeout: boolean;
  /** Message sends only: accepted and processed (statuses follow), but the answer never comes. */
  lose_answer: boolean;
  async_error: { code: number; title?: string; message?: string; details?: string } | null;
}

export interface CallbackAttempt {
  at: string;
  url: string;
  field: string;
  kind: string;
  phone_number_id: string;
  ref: string | null;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

export interface Stats {
  graph_requests: number;
  messages_sent: number;
  faults_applied: number;
  /** Sends refused with 130429 (beyond a number's throughput_mps). */
  throttled?: number;
  callbacks_ok: number;
  callbacks_failed: number;
  callbacks_retried: number;
  callbacks_dropped: number;
  status_progressions_dropped: number;
}

export class SimState {
  phones = new Map<string, PhoneNumber>();
  byToken = new Map<string, PhoneNumber>();
  byWaba = new Map<string, PhoneNumber>();
  byApp = new Map<string, PhoneNumber>();
  templates = new Map<string, Template>();
  /** At most 100k media records; the oldest are forgotten. */
  media = new BoundedMap<string, Media>(100_000, (_id, m) => this.dropMedia(m));
  mediaBytes = 0;
  /** Media holding bytes, oldest first (for the byte budget). */
  private withData = new Fifo<Media>();
  uploads: BoundedMap<string, UploadSession>;
  handles = new BoundedMap<string, IssuedHandle>(10_000);
  messages: RingBuffer<SentMessage>;
  index: BoundedMap<string, MessageMeta>;
  /** Last inbound message per `${pnid}:${wa_id}` (customer-service window). */
  lastInbound = new BoundedMap<string, number>(200_000);
  /** Who holds a customer's thread, per `${pnid}:${wa_id}`, when another app does (coexistence.ts). */
  threadHolders = new BoundedMap<string, string>(200_000);
  /** Open conversation per `${pnid}:${wa_id}:${category}`. */
  conversations = new BoundedMap<string, { id: string; expiresSec: number }>(200_000);
  faults: Fault[] = [];
  nextFaultId = 1;
  /** WhatsApp users with their business-scoped user ids (simulator/user-model.ts). */
  users = new SimUsers();
  callbackLog: RingBuffer<CallbackAttempt>;
  stats: Stats = SimState.zeroStats();

  constructor(
    readonly clock: Clock,
    readonly limits: SimLimits,
  ) {
    this.uploads = new BoundedMap(1_000);
    this.messages = new RingBuffer(limits.messageLogSize);
    this.index = new BoundedMap(limits.messageIndexSize);
    this.callbackLog = new RingBuffer(limits.callbackLogSize);
  }

  static zeroStats(): Stats {
    return {
      graph_requests: 0,
      messages_sent: 0,
      faults_applied: 0,
      callbacks_ok: 0,
      callbacks_failed: 0,
      callbacks_retried: 0,
      callbacks_dropped: 0,
      status_progressions_dropped: 0,
    };
  }

  nowMs(): number {
    return this.clock.now().getTime();
  }

  nowSec(): number {
    return Math.floor(this.nowMs() / 1000);
  }

  addPhone(p: PhoneNumber): void {
    this.phones.set(p.phone_number_id, p);
    this.byToken.set(p.access_token, p);
    // A WABA's own calls (templates, flows) answer to its first number's token; later numbers join it.
    if (!this.byWaba.has(p.waba_id)) this.byWaba.set(p.waba_id, p);
    this.byApp.set(p.app_id, p);
  }

  addMedia(m: Media): void {
    this.media.set(m.id, m);
    this.mediaBytes += m.data?.length ?? 0;
    this.withData.push(m);
    if (this.withData.length > 200_000) this.withData.retain((x) => x.data !== null);
    // Beyond the byte budget the oldest bodies are dropped (the record then answers like expired media).
    while (this.mediaBytes > this.limits.maxMediaBytes && this.withData.length > 1) {
      const old = this.withData.shift() as Media;
      if (old !== m) this.dropMedia(old);
    }
  }

  dropMedia(m: Media): void {
    if (m.data) this.mediaBytes -= m.data.length;
    m.data = null;
  }

  /** Media that exists, has its body and is younger than the TTL (per the injected clock). */
  liveMedia(id: string): Media | null {
    const m = this.media.get(id);
    if (!m || !m.data) return null;
    if (this.nowMs() - m.createdMs >= this.limits.mediaTtlMs) {
      this.dropMedia(m);
      return null;
    }
    return m;
  }

  clear(keepPhones: boolean): void {
    for (const t of this.templates.values()) if (t.timer) clearTimeout(t.timer);
    if (!keepPhones) {
      this.phones.clear();
      this.byToken.clear();
      this.byWaba.clear();
      this.byApp.clear();
    }
    this.templates.clear();
    this.media.clear();
    this.withData = new Fifo<Media>();
    this.mediaBytes = 0;
    this.uploads.clear();
    this.handles.clear();
    this.messages.clear();
    this.index.clear();
    this.lastInbound.clear();
    this.threadHolders.clear();
    this.conversations.clear();
    this.faults = [];
    this.users.clear();
    this.callbackLog.clear();
    this.stats = SimState.zeroStats();
  }
}
