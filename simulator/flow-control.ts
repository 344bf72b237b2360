/**
 * The control API of the simulator's flows (under /_sim, no auth): list flows, download an
 * uploaded Flow JSON, make the next upload report validation errors (Meta checks more than the
 * simulator), and complete a sent flow message as the customer (its nfm_reply on the webhook).
 */
import express, { type Request, type Response } from 'express';
import type { SimContext } from './context.js';
import { forceUploadErrors, simFlows, type SimFlowError } from './flows.js';
import { injectInbound } from './inbound.js';
import { isObj } from './validate.js';

export function flowControlRouter(ctx: SimContext): express.Router {
  const r = express.Router();
  r.get('/flows', (_req, res) => void res.json({ data: [...simFlows(ctx.state).values()].map(({ json, ...f }) => ({ ...f, has_json: json !== null })) }));
  r.get('/flows/:id/flow.json', (req, res) => {
    const f = simFlows(ctx.state).get(String(req.params.id));
    if (!f || f.json === null) return void res.status(404).json({ error: 'no such flow asset' });
    res.type('application/json').send(f.json);
  });
  // The customer completes a flow message: its nfm_reply arrives on the webhook like Meta's.
  r.post('/flows/complete', express.json(), async (req, res, next) => {
    try {
      const b = isObj(req.body) ? req.body : {};
      const sent = ctx.state.messages.toArray().find((m) => m.wamid === b.wamid);
      const interactive = sent && isObj(sent.payload) && isObj(sent.payload.interactive) ? sent.payload.interactive : null;
      const params = interactive && interactive.type === 'flow' && isObj(interactive.action) && isObj(interactive.action.parameters) ? interactive.action.parameters : null;
      if (!sent || !params) return void res.status(404).json({ error: 'wamid names no flow message sent through this simulator' });
      const response = isObj(b.response) ? b.response : {};
      const pn = ctx.state.phones.get(sent.phone_number_id)!;
      const out = await injectInbound(ctx, {
        phone_number_id: sent.phone_number_id,
        from: sent.to,
        ...(typeof b.name === 'string' ? { name: b.name } : {}),
        type: 'interactive',
        interactive: {
          type: 'nfm_reply',
          nfm_reply: { name: 'flow', body: 'Sent', response_json: JSON.stringify({ ...response, flow_token: typeof params.flow_token === 'string' ? params.flow_token : 'unused' }) },
        },
        context: { from: pn.display_phone_number.replace(/\D/g, ''), id: sent.wamid },
      });
      res.json(out);
    } catch (e) {
      next(e);
    }
  });
  r.post('/flows/upload-errors', express.json(), (req, res) => {
    const list = isObj(req.body) && Array.isArray(req.body.errors) ? req.body.errors : null;
    if (!list || !list.every((e: unknown) => isObj(e) && typeof e.error === 'string' && typeof e.message === 'string')) {
      return void res.status(400).json({ error: 'errors: [{ error, message, error_type?, line_start?, … }] is required' });
    }
    forceUploadErrors(
      ctx.state,
      list.map((e: Record<string, unknown>) => ({ error_type: 'FLOW_JSON_ERROR', line_start: 1, line_end: 1, column_start: 1, column_end: 1, ...e }) as SimFlowError),
    );
    res.json({ pending: list.length });
  });
  r.use((err: unknown, _req: Request, res: Response, next: (e?: unknown) => void) => {
    void next;
    const e = err as { status?: number; message?: string };
    res.status(typeof e?.status === 'number' ? e.status : 500).json({ error: e?.message ?? String(err) });
  });
  return r;
}
