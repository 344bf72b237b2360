/** The control API under /_sim (JSON, no auth). Documented in simulator/README.md. */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { SimContext } from './context.js';
import { FaultInputError, parseFault } from './faults.js';
import { accessToken, displayPhoneNumber, numericId } from './ids.js';
import { ControlError, injectInbound } from './inbound.js';
import { userAnswers, userAnswersPermission, userCalls, userHangsUp } from './calls.js';
import { changeSettings, createdAgain, deleteGroup, groupNotifications, listSimGroups, participantWrites, suspendGroup, userJoins, userLeaves } from './groups.js';
import { emitEcho, emitHandover, emitHistory, emitStateSync } from './coexistence.js';
import { changeUserId, createUser, shareContactInfo, updateUser, userPreference } from './users.js';
import type { AutoStatusDelays, PhoneNumber, Template } from './state.js';
import { requestLog } from './request-log.js';
import { templateView } from './templates.js';
import { isObj, type Obj } from './validate.js';
import { envelopeOf, type StatusError } from './webhooks.js';
import { capabilityWebhookValue, MESSAGING_LIMITS, messagingLimitOf, openEntryPoint, parsePricingOverride, readMarksOf } from './pricing.js';

export interface ControlHooks {
  advanceClock(ms: number): number;
  reset(keepPhones: boolean): void;
}

type H = (req: Request, res: Response) => unknown;
const wrap = (h: H) => async (req: Request, res: Response, next: NextFunction) => {
  try {
    const out = await h(req, res);
    if (out !== undefined && !res.headersSent) res.json(out);
  } catch (e) {
    next(e);
  }
};

const fail = (status: number, message: string): never => {
  throw new ControlError(status, message);
};
const body = (req: Request): Obj => (isObj(req.body) ? req.body : {});
const limitOf = (v: unknown, def: number, max: number) => Math.min(Math.max(Number(v) || def, 1), max);

function checkUrl(v: unknown): string {
  if (typeof v !== 'string') fail(400, 'callback_url (http or https URL) is required');
  try {
    const u = new URL(v as string);
    if (u.protocol === 'http:' || u.protocol === 'https:') return u.toString();
  } catch {
    /* fall through */
  }
  return fail(400, 'callback_url must be an http or https URL');
}

function throughputOf(v: unknown): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 100_000) fail(400, 'throughput_mps must be an integer from 1 to 100000, or null (unlimited)');
  return v as number;
}

/** The rate Meta allows at a level (coexistence numbers: 20). */
export const LEVEL_MPS = { STANDARD: 80, HIGH: 1000 } as const;
const levelMps = (p: PhoneNumber) => (p.coexistence ? 20 : LEVEL_MPS[p.throughput_level ?? 'STANDARD']);

function throughputLevelInput(v: unknown): 'STANDARD' | 'HIGH' {
  if (v !== 'STANDARD' && v !== 'HIGH') fail(400, 'throughput_level must be STANDARD or HIGH');
  return v as 'STANDARD' | 'HIGH';
}

function messagingLimitInput(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !Object.hasOwn(MESSAGING_LIMITS, v)) return fail(400, `messaging_limit must be one of ${Object.keys(MESSAGING_LIMITS).join(', ')}`);
  return v;
}

/** Whether the business accepted the Marketing Messages API terms (default true). */
function termsInput(v: unknown): boolean {
  if (v === undefined) return true;
  if (typeof v !== 'boolean') fail(400, 'marketing_messages_terms_accepted must be a boolean');
  return v as boolean;
}

function phoneView(p: PhoneNumber): Obj {
  return {
    phone_number_id: p.phone_number_id,
    waba_id: p.waba_id,
    app_id: p.app_id,
    access_token: p.access_token,
    display_phone_number: p.display_phone_number,
    verified_name: p.verified_name,
    callback_url: p.callback_url,
    enforce_customer_window: p.enforce_customer_window,
    throughput_mps: p.throughput_mps ?? null,
    throughput_level: p.throughput_level ?? 'STANDARD',
    coexistence: p.coexistence === true,
    messaging_limit: messagingLimitOf(p),
    marketing_messages_terms_accepted: p.marketing_messages_terms_accepted !== false,
    webhook_verification: p.verify_token ? p.verification : null,
    created_at: p.created_at,
  };
}

function parseDelays(v: unknown): AutoStatusDelays | null {
  if (v === null) return null;
  if (!isObj(v)) return fail(400, 'auto_status_delays_ms must be null or { sent?, delivered, read }');
  const n = (x: unknown, name: string, nullable: boolean): number | null => {
    if (x === null && nullable) return null;
    if (typeof x !== 'number' || x < 0 || x > 3_600_000) return fail(400, `auto_status_delays_ms.${name} must be a number of ms${nullable ? ' or null' : ''}`);
    return x;
  };
  return { sent: v.sent === undefined ? 0 : (n(v.sent, 'sent', false) as number), delivered: n(v.delivered, 'delivered', true), read: n(v.read, 'read', true) };
}

export function controlRouter(ctx: SimContext, hooks: ControlHooks): Router {
  const { state } = ctx;
  const r = express.Router();
  r.use(express.json({ limit: 25 * 1024 * 1024 }));

  r.get('/health', (_req, res) => void res.json({ ok: true }));
  // The Graph requests received and their answers (request-log.ts), oldest first.
  r.get('/requests', wrap((req) => ({ data: requestLog(state).slice(-limitOf(req.query.limit, 100, 1000)) })));
  numberRoutes(r, ctx);
  peopleRoutes(r, ctx);
  stateRoutes(r, ctx, hooks);

  r.use((_req: Request, res: Response) => void res.status(404).json({ error: { message: 'unknown control endpoint' } }));
  r.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    void next;
    const e = err as { status?: number; message?: string; type?: string };
    const status = err instanceof ControlError ? err.status : e?.type === 'entity.parse.failed' ? 400 : e?.type === 'entity.too.large' ? 413 : 500;
    if (status === 500) ctx.log.error?.('simulator: control error', { error: String(err) });
    res.status(status).json({ error: { message: e?.message ?? 'error' } });
  });
  return r;
}

/** The business's phone numbers: registration, settings, webhook verification. */
function numberRoutes(r: Router, ctx: SimContext): void {
  const { state, dispatcher } = ctx;
  const phoneOr404 = (id: string) => state.phones.get(id) ?? fail(404, `unknown phone_number_id ${id}`);
  r.post(
    '/phone-numbers',
    wrap(async (req, res) => {
      const b = body(req);
      const callback_url = checkUrl(b.callback_url);
      if (typeof b.app_secret !== 'string' || !b.app_secret) fail(400, 'app_secret (non-empty string) is required');
      if (b.verify_token !== undefined && b.verify_token !== null && typeof b.verify_token !== 'string') fail(400, 'verify_token must be a string');
      if (b.display_phone_number !== undefined && (typeof b.display_phone_number !== 'string' || !/^\+?\d{6,20}$/.test(b.display_phone_number))) {
        fail(400, 'display_phone_number must be digits');
      }
      if (b.waba_id !== undefined && (typeof b.waba_id !== 'string' || !/^\d{1,20}$/.test(b.waba_id))) fail(400, 'waba_id must be digits');
      const display = typeof b.display_phone_number === 'string' ? b.display_phone_number.replace(/\D/g, '') : displayPhoneNumber();
      const pn: PhoneNumber = {
        phone_number_id: numericId(15),
        // Another number of an existing WhatsApp Business Account when named, else a new account.
        waba_id: typeof b.waba_id === 'string' ? b.waba_id : numericId(15),
        app_id: numericId(16),
        access_token: accessToken(),
        display_phone_number: display,
        verified_name: typeof b.verified_name === 'string' ? b.verified_name : 'Simulated Business',
        callback_url,
        app_secret: b.app_secret as string,
        verify_token: typeof b.verify_token === 'string' ? b.verify_token : null,
        enforce_customer_window: b.enforce_customer_window === true,
        throughput_mps: b.throughput_mps === 'level' ? null : throughputOf(b.throughput_mps),
        ...(b.throughput_level !== undefined ? { throughput_level: throughputLevelInput(b.throughput_level) } : {}),
        ...(b.coexistence !== undefined ? { coexistence: b.coexistence === true } : {}),
        messaging_limit: messagingLimitInput(b.messaging_limit),
        marketing_messages_terms_accepted: termsInput(b.marketing_messages_terms_accepted),
        verification: { ok: null, at: null, status_code: null, error: null },
        lastVerifyAttemptMs: 0,
        created_at: state.clock.now().toISOString(),
      };
      if (b.throughput_mps === 'level') pn.throughput_mps = levelMps(pn);
      state.addPhone(pn);
      if (pn.verify_token) await dispatcher.verify(pn);
      res.status(201);
      return phoneView(pn);
    }),
  );
  r.get('/phone-numbers', wrap(() => ({ data: [...state.phones.values()].map(phoneView) })));
  r.get('/phone-numbers/:id', wrap((req) => phoneView(phoneOr404(String(req.params.id)))));
  r.patch(
    '/phone-numbers/:id',
    wrap(async (req) => {
      const pn = phoneOr404(String(req.params.id));
      const b = body(req);
      let reverify = false;
      if (b.callback_url !== undefined) (pn.callback_url = checkUrl(b.callback_url)), (reverify = true);
      if (b.app_secret !== undefined) pn.app_secret = typeof b.app_secret === 'string' && b.app_secret ? b.app_secret : fail(400, 'app_secret must be a non-empty string');
      if (b.verify_token !== undefined) (pn.verify_token = typeof b.verify_token === 'string' ? b.verify_token : null), (reverify = true);
      if (b.enforce_customer_window !== undefined) pn.enforce_customer_window = b.enforce_customer_window === true;
      const limitBefore = messagingLimitOf(pn);
      if (b.messaging_limit !== undefined) pn.messaging_limit = messagingLimitInput(b.messaging_limit);
      if (b.marketing_messages_terms_accepted !== undefined) pn.marketing_messages_terms_accepted = termsInput(b.marketing_messages_terms_accepted);
      if (b.throughput_mps !== undefined) {
        pn.throughput_mps = b.throughput_mps === 'level' ? levelMps(pn) : throughputOf(b.throughput_mps);
        pn.bucket = undefined;
      }
      const levelBefore = levelMps(pn);
      const coexistenceBefore = pn.coexistence === true;
      if (b.throughput_level !== undefined) pn.throughput_level = throughputLevelInput(b.throughput_level);
      if (b.coexistence !== undefined) pn.coexistence = b.coexistence === true;
      const levelChanged = levelMps(pn) !== levelBefore;
      // A number paced by its level (throughput_mps equal to it) follows the new level.
      if (levelChanged && pn.throughput_mps === levelBefore) (pn.throughput_mps = levelMps(pn)), (pn.bucket = undefined);
      if (reverify) {
        pn.verification = { ok: null, at: null, status_code: null, error: null };
        if (pn.verify_token) await dispatcher.verify(pn);
      }
      if (messagingLimitOf(pn) !== limitBefore) {
        // Meta announces a new portfolio limit to the business account's webhook.
        const hook = JSON.stringify(envelopeOf(pn, 'business_capability_update', capabilityWebhookValue(pn), state.nowSec()));
        await dispatcher.deliverNow({ pnid: pn.phone_number_id, field: 'business_capability_update', kind: 'business_capability_update', ref: pn.phone_number_id, body: hook, attempt: 0 });
      }
      if (levelChanged && pn.throughput_level === 'HIGH' && !pn.coexistence && levelBefore < LEVEL_MPS.HIGH) {
        // Meta announces an upgrade to the business account's webhook (Meta, "Throughput": event
        // THROUGHPUT_UPGRADE, max_daily_conversations_per_business TIER_UNLIMITED: only a portfolio
        // with an unlimited messaging limit is upgraded).
        pn.messaging_limit = 'TIER_UNLIMITED';
        const value = { display_phone_number: pn.display_phone_number, event: 'THROUGHPUT_UPGRADE', max_daily_conversations_per_business: 'TIER_UNLIMITED' };
        const hook = JSON.stringify(envelopeOf(pn, 'phone_number_quality_update', value, state.nowSec()));
        await dispatcher.deliverNow({ pnid: pn.phone_number_id, field: 'phone_number_quality_update', kind: 'phone_number_quality_update', ref: pn.phone_number_id, body: hook, attempt: 0 });
      } else if (pn.coexistence !== coexistenceBefore) {
        const value = { phone_number: pn.display_phone_number, event: pn.coexistence ? 'PARTNER_APP_INSTALLED' : 'PARTNER_APP_UNINSTALLED' };
        const hook = JSON.stringify(envelopeOf(pn, 'account_update', value, state.nowSec()));
        await dispatcher.deliverNow({ pnid: pn.phone_number_id, field: 'account_update', kind: 'account_update', ref: pn.phone_number_id, body: hook, attempt: 0 });
      }
      return phoneView(pn);
    }),
  );
  r.post('/phone-numbers/:id/verify', wrap(async (req) => {
    const pn = phoneOr404(String(req.params.id));
    if (!pn.verify_token) fail(400, 'this phone number has no verify_token');
    return { webhook_verification: await dispatcher.verify(pn) };
  }));

}

/** What WhatsApp users and the Business app do: messages, calls, groups, echoes, entry points, users. */
function peopleRoutes(r: Router, ctx: SimContext): void {
  const { state } = ctx;
  const phoneOr404 = (id: string) => state.phones.get(id) ?? fail(404, `unknown phone_number_id ${id}`);
  r.post('/inbound', wrap((req) => injectInbound(ctx, body(req))));
  r.post('/calls', wrap((req) => userCalls(ctx, body(req))));
  r.post('/calls/:id/answer', wrap((req) => userAnswers(ctx, String(req.params.id), body(req))));
  r.post('/calls/:id/hangup', wrap((req) => userHangsUp(ctx, String(req.params.id), body(req))));
  r.post('/users/:user/call-permission', wrap((req) => userAnswersPermission(ctx, String(req.params.user), body(req))));
  // Groups (groups.ts): the users of a group, and WhatsApp's own changes of it.
  r.get('/groups', wrap(() => listSimGroups(ctx)));
  r.get('/groups/:id/notifications', wrap((req) => groupNotifications(ctx, String(req.params.id))));
  r.post('/groups/:id/join', wrap((req) => userJoins(ctx, String(req.params.id), body(req))));
  r.post('/groups/:id/leave', wrap((req) => userLeaves(ctx, String(req.params.id), body(req))));
  r.post('/groups/:id/inbound', wrap((req) => participantWrites(ctx, String(req.params.id), body(req))));
  r.post('/groups/:id/settings', wrap((req) => changeSettings(ctx, String(req.params.id), body(req))));
  r.post('/groups/:id/suspend', wrap((req) => suspendGroup(ctx, String(req.params.id), body(req))));
  r.post('/groups/:id/delete', wrap((req) => deleteGroup(ctx, String(req.params.id), body(req))));
  r.post('/groups/:id/created', wrap((req) => createdAgain(ctx, String(req.params.id), body(req))));
  // The WhatsApp Business app beside the API, and other apps' handovers (coexistence.ts).
  r.post('/phone-numbers/:id/echoes', wrap((req) => emitEcho(ctx, phoneOr404(String(req.params.id)), body(req))));
  r.post('/phone-numbers/:id/history', wrap((req) => emitHistory(ctx, phoneOr404(String(req.params.id)), body(req))));
  r.post('/phone-numbers/:id/state-sync', wrap((req) => emitStateSync(ctx, phoneOr404(String(req.params.id)), body(req))));
  r.post('/phone-numbers/:id/handovers', wrap((req) => emitHandover(ctx, phoneOr404(String(req.params.id)), body(req))));
  r.get('/phone-numbers/:id/thread-holders', wrap((req) => {
    const pn = phoneOr404(String(req.params.id));
    return { data: [...state.threadHolders.entries()].filter(([k]) => k.startsWith(`${pn.phone_number_id}:`)).map(([k, app]) => ({ wa_id: k.split(':')[1], app_id: app })) };
  }));
  // Read marks and typing indicators the numbers received (pricing.ts), newest last.
  r.get('/read-marks', wrap(() => ({ data: readMarksOf(state) })));
  // A free entry point for a customer (72 hours of free_entry_point pricing), as a click-to-WhatsApp ad opens one.
  r.post('/phone-numbers/:id/entry-points', wrap((req) => {
    const pn = phoneOr404(String(req.params.id));
    const b = body(req);
    if (typeof b.wa_id !== 'string' || !/^\d{6,20}$/.test(b.wa_id)) fail(400, 'wa_id (digits) is required');
    return { wa_id: b.wa_id, until: new Date(openEntryPoint(state, pn.phone_number_id, b.wa_id as string)).toISOString() };
  }));
  // WhatsApp users with business-scoped user ids, usernames and withheld phones (simulator/users.ts).
  r.post('/users', wrap((req, res) => {
    res.status(201);
    return createUser(ctx, body(req));
  }));
  r.patch('/users/:userId', wrap((req) => updateUser(ctx, String(req.params.userId), body(req))));
  r.post('/users/:userId/preferences', wrap((req) => userPreference(ctx, String(req.params.userId), body(req))));
  r.post('/users/:userId/change-id', wrap((req) => changeUserId(ctx, String(req.params.userId), body(req))));
  r.post('/users/:userId/share-contact-info', wrap((req) => shareContactInfo(ctx, String(req.params.userId), body(req))));

}

/** Statuses, templates, faults and what the simulator recorded; its settings, clock and reset. */
function stateRoutes(r: Router, ctx: SimContext, hooks: ControlHooks): void {
  const { state, dispatcher } = ctx;
  r.post(
    '/status',
    wrap(async (req) => {
      const b = body(req);
      if (typeof b.wamid !== 'string') fail(400, 'wamid is required');
      const status = b.status;
      if (status !== 'sent' && status !== 'delivered' && status !== 'read' && status !== 'failed') return fail(400, 'status must be sent, delivered, read or failed');
      if (b.errors !== undefined && (!Array.isArray(b.errors) || !b.errors.every((e) => isObj(e) && typeof e.code === 'number'))) {
        fail(400, 'errors must be an array of { code, title?, message?, error_data?: { details } }');
      }
      // A pricing object as Meta may send it (any category or type: Meta adds values), for this status.
      if (b.pricing !== undefined) {
        const override = parsePricingOverride(b.pricing);
        if (typeof override === 'string') fail(400, override);
        const meta = state.index.get(b.wamid as string);
        if (meta) meta.pricingOverride = override as Record<string, unknown>;
      }
      const r2 = await ctx.statuses.manual(b.wamid as string, status, b.errors as StatusError[] | undefined);
      if (!r2) return fail(404, `unknown wamid ${String(b.wamid)} (only recent messages are kept)`);
      return { wamid: b.wamid, status, ...r2 };
    }),
  );

  r.get('/templates', wrap((req) => {
    const w = req.query.waba_id;
    const list = [...state.templates.values()].filter((t) => typeof w !== 'string' || t.waba_id === w);
    return { data: list.map((t) => ({ ...templateView(t, ['name', 'language', 'category', 'status', 'rejected_reason', 'components', 'parameter_format']), waba_id: t.waba_id, created_at: t.created_at })) };
  }));
  r.post(
    '/templates/:id/decision',
    wrap(async (req) => {
      const t = state.templates.get(String(req.params.id)) ?? fail(404, `unknown template ${String(req.params.id)}`);
      const b = body(req);
      const d = b.decision;
      if (d !== 'APPROVED' && d !== 'REJECTED' && d !== 'PAUSED' && d !== 'DISABLED') return fail(400, 'decision must be APPROVED, REJECTED, PAUSED or DISABLED');
      if (b.reason !== undefined && typeof b.reason !== 'string') fail(400, 'reason must be a string');
      const r2 = await ctx.decideTemplate(t as Template, d, b.reason as string | undefined);
      return { id: (t as Template).id, status: d, ...r2 };
    }),
  );

  r.post('/faults', wrap((req, res) => {
    try {
      const f = parseFault(state, body(req));
      state.faults.push(f);
      res.status(201);
      return f;
    } catch (e) {
      if (e instanceof FaultInputError) return fail(400, e.message);
      throw e;
    }
  }));
  r.get('/faults', wrap(() => ({ data: state.faults })));
  r.delete('/faults', wrap(() => {
    const cleared = state.faults.length;
    state.faults = [];
    return { cleared };
  }));

  r.get('/messages', wrap((req) => {
    const { phone_number_id: p, to } = req.query;
    // `to`: a phone (any formatting) or a user id (a reply by `recipient` to a username customer).
    const digits = typeof to === 'string' ? to.replace(/\D/g, '') : null;
    const all = state.messages.toArray().filter((m) => (typeof p !== 'string' || m.phone_number_id === p) && (digits === null || (digits !== '' && m.to === digits) || m.user_id === to));
    const data = all.slice(-limitOf(req.query.limit, 100, state.limits.messageLogSize));
    return { data: data.map((m) => ({ wamid: m.wamid, phone_number_id: m.phone_number_id, to: m.to, ...(m.user_id ? { user_id: m.user_id } : {}), type: m.type, route: m.route ?? 'messages', status: m.meta.status, at: m.at, payload: m.payload })) };
  }));
  r.get('/callbacks', wrap((req) => {
    const { phone_number_id: p, kind } = req.query;
    const all = state.callbackLog.toArray().filter((c) => (typeof p !== 'string' || c.phone_number_id === p) && (typeof kind !== 'string' || c.kind.startsWith(kind)));
    return { data: all.slice(-limitOf(req.query.limit, 100, state.limits.callbackLogSize)) };
  }));
  r.get('/stats', wrap(() => ({ ...state.stats, callbacks_pending: dispatcher.pending, messages_logged: state.messages.size, media_bytes: state.mediaBytes })));

  r.get('/config', wrap(() => ({ auto_status_delays_ms: ctx.statuses.autoDelays, template_auto_decision_ms: ctx.templateAutoDecisionMs })));
  r.patch('/config', wrap((req) => {
    const b = body(req);
    if (b.auto_status_delays_ms !== undefined) ctx.statuses.setDelays(parseDelays(b.auto_status_delays_ms));
    if (b.template_auto_decision_ms !== undefined) {
      const v = b.template_auto_decision_ms;
      if (v !== null && (typeof v !== 'number' || v < 0)) fail(400, 'template_auto_decision_ms must be null or a number of ms');
      ctx.templateAutoDecisionMs = v as number | null;
    }
    return { auto_status_delays_ms: ctx.statuses.autoDelays, template_auto_decision_ms: ctx.templateAutoDecisionMs };
  }));
  r.post('/clock', wrap((req) => {
    const ms = body(req).advance_ms;
    if (typeof ms !== 'number' || !Number.isFinite(ms)) fail(400, 'advance_ms (number) is required');
    return { offset_ms: hooks.advanceClock(ms as number), now: state.clock.now().toISOString() };
  }));
  r.post('/reset', wrap((req) => {
    hooks.reset(body(req).keep_phone_numbers === true);
    return { ok: true };
  }));

}
