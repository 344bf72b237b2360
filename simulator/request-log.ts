/**
 * The Graph requests the simulator received, with its answers (the last 1,000): what a contract
 * test checks against Meta's schemas. JSON bodies as parsed (over 64 KB, their size); multipart
 * forms as their fields, the file as a size; raw upload chunks as a size. GET /_sim/requests.
 */
import type { Request, Response } from 'express';
import type { SimState } from './state.js';

export interface GraphRequestEntry {
  at: string;
  method: string;
  /** The path under the version, e.g. `/123/messages`. */
  path: string;
  version: string;
  query: Record<string, unknown>;
  content_type: string | null;
  body: unknown;
  status: number;
  answer: unknown;
}

const MAX = 1000;
/** Larger bodies are kept as their size: the log stays small whatever is sent. */
const MAX_BODY_BYTES = 64 * 1024;
const logs = new WeakMap<SimState, GraphRequestEntry[]>();

export const requestLog = (state: SimState): GraphRequestEntry[] => {
  let l = logs.get(state);
  if (!l) logs.set(state, (l = []));
  return l;
};

/** A multipart form as the log shows it (handlers call this once they have read it). */
export function recordForm(res: Response, fields: Record<string, string>, file: { bytes: number; mime?: string; name?: string } | null): void {
  res.locals.simForm = { ...fields, ...(file ? { file: `(${file.bytes} bytes${file.mime ? `, ${file.mime}` : ''})` } : {}) };
}

/** Records the request and its answer when the answer is finished. */
export function logRequest(state: SimState, req: Request, res: Response): void {
  let answer: unknown = null;
  const json = res.json.bind(res);
  res.json = (body: unknown) => {
    answer = body;
    return json(body);
  };
  res.on('finish', () => {
    const form = res.locals.simForm as unknown;
    const length = Number(req.get('content-length') ?? 0);
    const body = form ?? (Buffer.isBuffer(req.body) || length > MAX_BODY_BYTES ? `(${length} bytes)` : req.body);
    const l = requestLog(state);
    l.push({
      at: state.clock.now().toISOString(),
      method: req.method,
      path: req.path,
      version: String(req.params.version),
      query: { ...req.query },
      content_type: req.get('content-type') ?? null,
      body: body === undefined ? null : body,
      status: res.statusCode,
      answer,
    });
    if (l.length > MAX) l.splice(0, l.length - MAX);
  });
}
