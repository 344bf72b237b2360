/**
 * Fault injection for Graph calls: the next `count` matching calls fail with a Graph error, a plain
 * HTTP status, extra latency, or no answer at all; or (message sends only) are accepted and then
 * reported `failed` by webhook, or accepted and processed with the answer lost (`lose_answer`).
 */
import type { Request, Response } from 'express';
import { injectedError, sendGraphError } from './errors.js';
import type { Fault, SimState } from './state.js';

export const OPERATIONS = ['messages', 'media', 'templates', 'uploads', 'other'] as const;
export type Operation = (typeof OPERATIONS)[number];

export class FaultInputError extends Error {}

function int(v: unknown, name: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new FaultInputError(`${name} must be an integer in [${min}, ${max}]`);
  return v;
}

function optString(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new FaultInputError(`${name} must be a string`);
  return v;
}

/** Validate a POST /_sim/faults body. */
export function parseFault(state: SimState, b: Record<string, unknown>): Fault {
  const f: Fault = {
    id: state.nextFaultId++,
    phone_number_id: optString(b.phone_number_id, 'phone_number_id') ?? null,
    operation: optString(b.operation, 'operation') ?? null,
    remaining: b.count === undefined ? 1 : int(b.count, 'count', 1, 1_000_000_000),
    graph_error: null,
    http_status: b.http_status === undefined || b.http_status === null ? null : int(b.http_status, 'http_status', 400, 599),
    latency_ms: b.latency_ms === undefined || b.latency_ms === null ? 0 : int(b.latency_ms, 'latency_ms', 0, 600_000),
    timeout: b.timeout === true,
    lose_answer: b.lose_answer === true,
    async_error: null,
  };
  if (f.lose_answer) {
    if (f.operation === null) f.operation = 'messages';
    if (f.operation !== 'messages') throw new FaultInputError('lose_answer applies to operation "messages" only');
  }
  if (f.operation !== null && !(OPERATIONS as readonly string[]).includes(f.operation)) {
    throw new FaultInputError(`operation must be one of ${OPERATIONS.join(', ')}`);
  }
  if (b.graph_error !== undefined && b.graph_error !== null) {
    const g = b.graph_error as Record<string, unknown>;
    if (typeof g !== 'object') throw new FaultInputError('graph_error must be an object');
    f.graph_error = {
      code: int(g.code, 'graph_error.code', 1, 10_000_000),
      http_status: g.http_status === undefined ? undefined : int(g.http_status, 'graph_error.http_status', 400, 599),
      message: optString(g.message, 'graph_error.message'),
      subcode: g.subcode === undefined ? undefined : int(g.subcode, 'graph_error.subcode', 0, 100_000_000),
      details: optString(g.details, 'graph_error.details'),
    };
  }
  if (b.async_error !== undefined && b.async_error !== null) {
    const a = b.async_error as Record<string, unknown>;
    if (typeof a !== 'object') throw new FaultInputError('async_error must be an object');
    f.async_error = {
      code: int(a.code, 'async_error.code', 1, 10_000_000),
      title: optString(a.title, 'async_error.title'),
      message: optString(a.message, 'async_error.message'),
      details: optString(a.details, 'async_error.details'),
    };
    if (f.operation === null) f.operation = 'messages';
    if (f.operation !== 'messages') throw new FaultInputError('async_error applies to operation "messages" only');
  }
  const effects = [f.graph_error, f.http_status, f.timeout || null, f.lose_answer || null, f.async_error, f.latency_ms || null].filter((x) => x !== null);
  if (effects.length === 0) throw new FaultInputError('give at least one of graph_error, http_status, latency_ms, timeout, lose_answer, async_error');
  return f;
}

/** Take (and count down) the first fault matching this call. */
export function takeFault(state: SimState, pnid: string | null, op: Operation): Fault | null {
  for (let i = 0; i < state.faults.length; i++) {
    const f = state.faults[i];
    if (f.phone_number_id !== null && f.phone_number_id !== pnid) continue;
    if (f.operation !== null && f.operation !== op) continue;
    f.remaining--;
    if (f.remaining <= 0) state.faults.splice(i, 1);
    state.stats.faults_applied++;
    return f;
  }
  return null;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Apply a fault's synchronous effects. Returns true when the response was handled (error sent, or the
 * request is being held forever); false to continue normally (latency only, or async_error).
 */
export async function applyFault(f: Fault, req: Request, res: Response, held: Set<Response>): Promise<boolean> {
  if (f.latency_ms > 0) await sleep(f.latency_ms);
  if (f.timeout) {
    held.add(res);
    res.on('close', () => held.delete(res));
    return true;
  }
  if (f.graph_error) {
    sendGraphError(res, injectedError(f.graph_error));
    return true;
  }
  if (f.http_status !== null) {
    const status = f.http_status;
    res
      .status(status)
      .type('text/html')
      .send(`<html><head><title>Error</title></head><body>Sorry, something went wrong (HTTP ${status}).</body></html>`);
    return true;
  }
  if (f.async_error) (res.locals as Record<string, unknown>).asyncError = f.async_error;
  if (f.lose_answer) {
    // The send is processed; its answer is held until the caller gives up (the outcome it sees is unknown).
    (res.locals as Record<string, unknown>).loseAnswer = true;
    held.add(res);
    res.on('close', () => held.delete(res));
  }
  void req;
  return false;
}
