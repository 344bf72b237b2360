/** The Graph API surface under /:version (v26.0 etc.: the versions Meta serves, versions.ts), with fault injection in front of it. */
import { threadControl } from './coexistence.js';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { requireAnyToken, requireToken, tokenOf, type SimContext } from './context.js';
import { GraphError, paramError, sendGraphError, unknownPath, unsupportedRequest } from './errors.js';
import { fbtraceId } from './ids.js';
import { applyFault, takeFault, type Operation } from './faults.js';
import { createUploadSession, deleteMedia, getMedia, uploadChunk, uploadMedia, uploadStatus } from './media.js';
import { sendMessage } from './messages.js';
import { callAction } from './calls.js';
import { approveJoinRequests, createGroup, createInviteLink, deleteGroupNode, groupsOf, listJoinRequests, rejectJoinRequests, removeParticipants, updateGroupSettings } from './groups.js';
import { getTemplate, createTemplate, deleteTemplates, listTemplates } from './templates.js';
import { logRequest } from './request-log.js';
import { createFlow, deleteFlow, deprecateFlow, flowOf, getFlow, listAssets, listFlows, publishFlow, uploadAsset } from './flows.js';
import { messagingLimitOf } from './pricing.js';
import { deprecatedVersion, versionState } from './versions.js';

const safeDecode = (s: string) => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

type Handler = (req: Request, res: Response) => void | Promise<void>;

/** Express 5 forwards rejections; this also turns sync throws of GraphError into responses. */
const wrap = (h: Handler) => async (req: Request, res: Response, next: NextFunction) => {
  try {
    await h(req, res);
  } catch (e) {
    next(e);
  }
};

function operationOf(ctx: SimContext, segs: string[]): Operation {
  const [node, edge] = segs;
  if (edge === 'messages' || edge === 'marketing_messages') return 'messages';
  if (edge === 'media') return 'media';
  if (edge === 'message_templates') return 'templates';
  if (edge === 'uploads' || node?.startsWith('upload:')) return 'uploads';
  if (!edge && node && ctx.state.media.has(node)) return 'media';
  return 'other';
}

function phoneOf(ctx: SimContext, req: Request, node: string | undefined): string | null {
  const t = tokenOf(req);
  const byToken = t ? ctx.state.byToken.get(t) : undefined;
  if (byToken) return byToken.phone_number_id;
  if (!node) return null;
  const s = ctx.state;
  return s.phones.get(node)?.phone_number_id ?? s.byWaba.get(node)?.phone_number_id ?? s.byApp.get(node)?.phone_number_id ?? s.media.get(node)?.pnid ?? null;
}

export function graphRouter(ctx: SimContext): Router {
  const { state } = ctx;
  const r = express.Router({ mergeParams: true });
  const json = express.json({ limit: state.limits.jsonLimitBytes, type: () => true });
  const raw = express.raw({ limit: state.limits.uploadLimitBytes, type: () => true });

  r.use(async (req: Request, res: Response, next: NextFunction) => {
    try {
      const version = String(req.params.version);
      if (!/^v\d{1,2}\.\d{1,2}$/.test(version)) throw unknownPath(req.path === '/' ? `/${version}` : `/${version}${req.path}`);
      const served = versionState(version, state.clock.now());
      if (served === 'unreleased') throw unknownPath(req.path === '/' ? `/${version}` : `/${version}${req.path}`);
      if (served === 'retired') throw deprecatedVersion();
      state.stats.graph_requests++;
      logRequest(state, req, res);
      const segs = req.path.split('/').filter(Boolean).map(safeDecode);
      const operation = operationOf(ctx, segs);
      const fault = takeFault(state, phoneOf(ctx, req, segs[0]), operation);
      // A slow channel has the whole request before it is slow: a send's body is read first, so a
      // caller that dies during the latency (a crash) still gets its message processed, as at Meta.
      if (fault && operation === 'messages' && req.method === 'POST') await new Promise<void>((resolve, reject) => json(req, res, (e?: unknown) => (e ? reject(e) : resolve())));
      if (fault && (await applyFault(fault, req, res, ctx.held))) return;
      if (!res.headersSent) res.set('x-fb-trace-id', fbtraceId());
      next();
    } catch (e) {
      next(e);
    }
  });

  r.post('/:node/messages', json, wrap(sendMessage(ctx)));
  r.post('/:node/marketing_messages', json, wrap(sendMessage(ctx, 'marketing_messages')));
  r.post('/:node/calls', json, wrap(callAction(ctx)));
  r.post('/:node/groups', json, wrap(createGroup(ctx)));
  r.post('/:node/invite_link', json, wrap(createInviteLink(ctx)));
  r.delete('/:node/participants', json, wrap(removeParticipants(ctx)));
  r.get('/:node/join_requests', wrap(listJoinRequests(ctx)));
  r.post('/:node/join_requests', json, wrap(approveJoinRequests(ctx)));
  r.delete('/:node/join_requests', json, wrap(rejectJoinRequests(ctx)));
  r.post('/:node/thread_control', json, wrap(threadControl(ctx)));
  r.post('/:node/media', wrap(uploadMedia(ctx)));
  r.get('/:node/message_templates', wrap(listTemplates(ctx)));
  r.post('/:node/message_templates', json, wrap(createTemplate(ctx)));
  r.delete('/:node/message_templates', wrap(deleteTemplates(ctx)));
  r.post('/:node/uploads', wrap(createUploadSession(ctx)));
  r.post('/:node/flows', wrap(createFlow(ctx)));
  r.get('/:node/flows', wrap(listFlows(ctx)));
  r.post('/:node/assets', wrap(uploadAsset(ctx)));
  r.get('/:node/assets', wrap(listAssets(ctx)));
  r.post('/:node/publish', wrap(publishFlow(ctx)));
  r.post('/:node/deprecate', wrap(deprecateFlow(ctx)));

  r.get(
    '/:node',
    wrap((req, res) => {
      const node = String(req.params.node);
      if (node.startsWith('upload:')) return uploadStatus(ctx, req, res);
      const media = state.media.get(node);
      if (media) return getMedia(ctx, req, res, media);
      const tpl = state.templates.get(node);
      if (tpl) return getTemplate(req, res, state, tpl);
      const flow = flowOf(ctx, req);
      if (flow) return getFlow(ctx, req, res, flow);
      const pn = state.phones.get(node);
      if (pn) {
        requireToken(req, pn);
        res.json({
          verified_name: pn.verified_name,
          code_verification_status: 'VERIFIED',
          display_phone_number: pn.display_phone_number,
          quality_rating: 'GREEN',
          platform_type: 'CLOUD_API',
          throughput: { level: pn.throughput_level ?? 'STANDARD' },
          is_on_biz_app: pn.coexistence === true,
          // The portfolio's messaging limit (pricing.ts); messaging_limit_tier is deprecated at Meta.
          whatsapp_business_manager_messaging_limit: messagingLimitOf(pn),
          id: pn.phone_number_id,
        });
        return;
      }
      const waba = state.byWaba.get(node);
      if (waba) {
        requireToken(req, waba);
        res.json({ id: waba.waba_id, name: waba.verified_name, timezone_id: '1', message_template_namespace: `sim_${waba.waba_id}` });
        return;
      }
      requireAnyToken(state, req);
      throw unsupportedRequest('get', node);
    }),
  );

  r.post(
    '/:node',
    (req: Request, res: Response, next: NextFunction) => (String(req.params.node).startsWith('upload:') ? raw(req, res, next) : json(req, res, next)),
    wrap((req, res) => {
      const node = String(req.params.node);
      if (node.startsWith('upload:')) return uploadChunk(ctx, req, res);
      if (groupsOf(state).has(node)) return updateGroupSettings(ctx)(req, res);
      requireAnyToken(state, req);
      throw unsupportedRequest('post', node);
    }),
  );

  r.delete(
    '/:node',
    wrap((req, res) => {
      const node = String(req.params.node);
      const media = state.media.get(node);
      if (media) return deleteMedia(ctx, req, res, media);
      const flow = flowOf(ctx, req);
      if (flow) return deleteFlow(ctx, req, res, flow);
      if (groupsOf(state).has(node)) return deleteGroupNode(ctx)(req, res);
      requireAnyToken(state, req);
      throw unsupportedRequest('delete', node);
    }),
  );

  r.all(
    '/*rest',
    wrap((req) => {
      throw unknownPath(`/${String(req.params.version)}${req.path}`);
    }),
  );

  r.use((err: unknown, req: Request, res: Response, next: NextFunction) => {
    void next;
    if (res.headersSent) return;
    sendGraphError(res, toGraphError(err, ctx));
  });
  return r;
}

export function toGraphError(err: unknown, ctx: SimContext): GraphError {
  if (err instanceof GraphError) return err;
  const e = err as { type?: string; status?: number; message?: string };
  if (e?.type === 'entity.too.large') return new GraphError(413, paramError('Request body too large', e.message).body);
  if (e?.type === 'entity.parse.failed') return paramError('Invalid parameter', 'The request body could not be parsed as JSON.');
  if (e?.status && e.status >= 400 && e.status < 500) return paramError('Invalid parameter', e.message);
  ctx.log.error?.('simulator: unexpected error', { error: String(err) });
  return new GraphError(500, {
    error: { message: 'An unexpected error has occurred. Please retry your request later.', type: 'OAuthException', code: 2, is_transient: true, fbtrace_id: fbtraceId() },
  });
}
