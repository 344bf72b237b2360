/** What the route modules share. */
import type { Request, Response } from 'express';
import type { Dispatcher } from './callbacks.js';
import { oauthError, unsupportedRequest } from './errors.js';
import type { StatusEngine } from './progression.js';
import type { PhoneNumber, SimLogger, SimState, Template } from './state.js';

export interface SimContext {
  state: SimState;
  dispatcher: Dispatcher;
  statuses: StatusEngine;
  log: SimLogger;
  /** Responses held open by `timeout` faults; ended by close(). */
  held: Set<Response>;
  publicBaseUrl: string | null;
  templateAutoDecisionMs: number | null;
  /** Decide a template (updates it and sends the webhook). */
  decideTemplate(t: Template, decision: Template['status'], reason?: string): Promise<{ delivered: boolean; status_code: number | null }>;
}

/** Bearer or OAuth Authorization header, else the access_token query parameter (Graph accepts both). */
export function tokenOf(req: Request): string | null {
  const h = req.get('authorization');
  if (h) {
    const m = /^(Bearer|OAuth)\s+(\S+)\s*$/i.exec(h);
    return m ? m[2] : null;
  }
  const q = req.query.access_token;
  return typeof q === 'string' && q ? q : null;
}

/** Throws Graph error 190 (HTTP 401) unless the request carries `pn`'s token. */
export function requireToken(req: Request, pn: PhoneNumber): void {
  const t = tokenOf(req);
  if (!t) throw oauthError('An active access token must be used to query information about the current user.');
  if (t !== pn.access_token) throw oauthError();
}

/** Any registered token (for ids that do not exist: no token is 190, a valid one gets 100/33). */
export function requireAnyToken(state: SimState, req: Request): PhoneNumber {
  const t = tokenOf(req);
  if (!t) throw oauthError('An active access token must be used to query information about the current user.');
  const pn = state.byToken.get(t);
  if (!pn) throw oauthError();
  return pn;
}

/**
 * The phone number (or app, with `byApp`) a Graph POST names as `:node`, its token checked. An id
 * nobody has is Graph's unsupported request, once the caller's token is known to be valid.
 */
export function postedNode(state: SimState, req: Request, registry: Map<string, PhoneNumber> = state.phones): PhoneNumber {
  const node = String(req.params.node);
  const pn = registry.get(node);
  if (!pn) {
    requireAnyToken(state, req);
    throw unsupportedRequest('post', node);
  }
  requireToken(req, pn);
  return pn;
}

/** Base URL the simulator is reached at (for media download URLs). */
export function baseUrl(ctx: SimContext, req: Request): string {
  return ctx.publicBaseUrl ?? `${req.protocol}://${req.get('host')}`;
}
