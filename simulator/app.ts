/**
 * WhatsApp Cloud API simulator: a standalone Express app that answers the Graph API calls the service
 * makes (messages, templates, media, resumable upload) and calls the registered webhook like Meta.
 * Shares no code with the service, only the wire format. Control API under /_sim (see README.md).
 */
import { persistState } from './persistence.js';
import { openOwedStatuses } from './owed-statuses.js';
import express, { type NextFunction, type Request, type Response } from 'express';
import { Dispatcher } from './callbacks.js';
import type { SimContext } from './context.js';
import { controlRouter } from './control.js';
import { GraphError, paramError, sendGraphError } from './errors.js';
import { graphRouter } from './graph.js';
import { flowControlRouter } from './flow-control.js';
import { downloadMedia } from './media.js';
import { StatusEngine } from './progression.js';
import { DEFAULT_LIMITS, SimState, type AutoStatusDelays, type Clock, type SimLimits, type SimLogger, type Template } from './state.js';
import { templateWebhook } from './webhooks.js';
import { requestLog } from './request-log.js';
import { warmSendCheck } from './meta-check.js';

export type { AutoStatusDelays, Clock, SimLimits, SimLogger } from './state.js';
export { signBody } from './callbacks.js';

export interface SimulatorOptions {
  /** Source of "now" for timestamps, media expiry (30 days) and the customer-service window. */
  clock?: Clock;
  /** Automatic sent → delivered → read; null disables automatic statuses. Default { sent: 0, delivered: 300, read: 1000 }. */
  autoStatusDelaysMs?: AutoStatusDelays | null;
  /** Approve new templates automatically after this many ms; null (default) waits for the control API. */
  templateAutoDecisionMs?: number | null;
  logger?: SimLogger;
  /** Base URL put in media download URLs; default: the Host of the request. */
  publicBaseUrl?: string;
  limits?: Partial<SimLimits>;
  /**
   * Keep numbers, templates and media in this folder across restarts (simulator/persistence.ts),
   * and the statuses still owed, delivered again after a restart (simulator/owed-statuses.ts).
   */
  dataDir?: string;
}

export interface Simulator {
  app: express.Express;
  state: SimState;
  /** The automatic statuses waiting for their batch's window to close. */
  batchedStatuses(): Array<{ wamid: string; status: string }>;
  /** Close every batch's window now (a test's clock for `statusBatchMs`). */
  flushStatusBatches(): void;
  close(): Promise<void>;
}

export const DEFAULT_AUTO_STATUS_DELAYS: AutoStatusDelays = { sent: 0, delivered: 300, read: 1000 };

export function createSimulator(opts: SimulatorOptions = {}): Simulator {
  const base = opts.clock ?? { now: () => new Date() };
  let offsetMs = 0;
  const clock: Clock = { now: () => new Date(base.now().getTime() + offsetMs) };
  const log = opts.logger ?? {};
  const state = new SimState(clock, { ...DEFAULT_LIMITS, ...opts.limits });
  const dispatcher = new Dispatcher(state, log);
  const delays = opts.autoStatusDelaysMs === undefined ? DEFAULT_AUTO_STATUS_DELAYS : opts.autoStatusDelaysMs;
  const held = new Set<Response>();
  warmSendCheck();
  const persistence = opts.dataDir ? persistState(state, opts.dataDir) : undefined;
  // After the numbers are loaded: owed statuses go to their number's webhook.
  const owed = opts.dataDir ? openOwedStatuses(state, opts.dataDir) : undefined;
  const statuses = new StatusEngine(state, dispatcher, delays, owed);
  statuses.resume();

  const ctx: SimContext = {
    state,
    dispatcher,
    statuses,
    log,
    held,
    publicBaseUrl: opts.publicBaseUrl?.replace(/\/+$/, '') ?? null,
    templateAutoDecisionMs: opts.templateAutoDecisionMs ?? null,
    async decideTemplate(t: Template, decision: Template['status'], reason?: string) {
      if (t.timer) clearTimeout(t.timer);
      t.timer = null;
      t.status = decision;
      t.rejected_reason = decision === 'REJECTED' ? (reason ?? 'INVALID_FORMAT') : 'NONE';
      const pn = state.byWaba.get(t.waba_id);
      if (!pn) return { delivered: false, status_code: null };
      const why = decision === 'REJECTED' ? t.rejected_reason : (reason ?? 'NONE');
      const body = JSON.stringify(templateWebhook(state, pn, t, decision, why));
      const r = await dispatcher.deliverNow({ pnid: pn.phone_number_id, field: 'message_template_status_update', kind: 'template', ref: t.id, body, attempt: 0 });
      return { delivered: r.delivered, status_code: r.status_code };
    },
  };

  const endHeld = () => {
    for (const res of held) res.socket?.destroy();
    held.clear();
  };

  const app = express();
  app.set('x-powered-by', false);
  app.set('etag', false);

  // Refuse oversized bodies before reading them.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const len = Number(req.get('content-length') ?? 0);
    if (len > state.limits.uploadLimitBytes) {
      res.set('connection', 'close');
      sendGraphError(res, new GraphError(413, paramError('Request body too large', `The request body exceeds ${state.limits.uploadLimitBytes} bytes.`).body));
      return;
    }
    next();
  });

  app.use('/_sim', flowControlRouter(ctx));
  app.use(
    '/_sim',
    controlRouter(ctx, {
      advanceClock(ms) {
        offsetMs += ms;
        return offsetMs;
      },
      reset(keepPhones) {
        statuses.clear();
        owed?.reset();
        dispatcher.clear();
        endHeld();
        state.clear(keepPhones);
        requestLog(state).length = 0;
      },
    }),
  );
  app.get('/whatsapp_business/attachments', downloadMedia(ctx));
  app.use('/:version', graphRouter(ctx));

  return {
    app,
    state,
    batchedStatuses: () => dispatcher.batchedStatuses(),
    flushStatusBatches: () => dispatcher.flushAllStatuses(),
    async close() {
      persistence?.close();
      for (const t of state.templates.values()) if (t.timer) clearTimeout(t.timer);
      statuses.clear();
      dispatcher.close();
      // After the dispatcher: what was still in flight stays owed for the next start.
      owed?.close();
      endHeld();
    },
  };
}
