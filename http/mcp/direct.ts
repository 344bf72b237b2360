/**
 * The handshake revisions' `tools/list` and `tools/call` answered without building an SDK server and
 * transport per request (issue 67 item 5: that was most of what an MCP send cost over the same POST;
 * this server is stateless, so each request built both). Only a request the SDK would accept as is
 * takes this path: one JSON-RPC request with nothing else at its top level, `Accept` naming
 * application/json and text/event-stream, a body express.json parsed (so JSON), and params of the
 * shape the SDK's schemas require. Anything else, `initialize` included, is the SDK's, so every
 * refusal stays its own. The answer is written as the SDK's JSON-response mode writes it:
 * `Content-Type: application/json`, `{"result", "jsonrpc", "id"}`, an error as its Protocol sends one.
 */
import type { Request, Response } from 'express';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';

export interface DirectRequest {
  id: string | number;
  method: 'tools/list' | 'tools/call';
  params: Record<string, unknown>;
}

const TOP_LEVEL = new Set(['jsonrpc', 'id', 'method', 'params']);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The request when it may skip the SDK, else undefined. */
export function directRequest(req: Request): DirectRequest | undefined {
  const accept = req.headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
  const body = req.body as unknown;
  if (!isObject(body) || body.jsonrpc !== '2.0') return undefined;
  if (Object.keys(body).some((k) => !TOP_LEVEL.has(k))) return undefined;
  const id = body.id;
  if (!(typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)))) return undefined;
  const params = body.params === undefined ? {} : body.params;
  if (!isObject(params)) return undefined;
  if (params._meta !== undefined && !isObject(params._meta)) return undefined;
  if (body.method === 'tools/list') {
    if (params.cursor !== undefined && typeof params.cursor !== 'string') return undefined;
    return { id, method: 'tools/list', params };
  }
  if (body.method === 'tools/call') {
    if (typeof params.name !== 'string') return undefined;
    if (params.arguments !== undefined && !isObject(params.arguments)) return undefined;
    // A task-augmented call (2025-11-25 tasks) is the SDK's to refuse or run.
    if (params.task !== undefined) return undefined;
    return { id, method: 'tools/call', params };
  }
  return undefined;
}

/** The answer to a direct request: its result, or the error its handler threw, as the SDK writes them. */
export async function answerDirect(res: Response, id: string | number, run: () => Promise<unknown>): Promise<void> {
  let message: unknown;
  try {
    message = { result: await run(), jsonrpc: '2.0', id };
  } catch (e) {
    const { code, message: text, data } = (e ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
    const error = {
      code: typeof code === 'number' && Number.isSafeInteger(code) ? code : ErrorCode.InternalError,
      message: typeof text === 'string' ? text : 'Internal error',
      ...(data !== undefined ? { data } : {}),
    };
    message = { jsonrpc: '2.0', id, error };
  }
  res.status(200).setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify(message));
}
