/**
 * MCP 2026-07-28 on /mcp, on our own transport (the SDK this service uses, 1.32, knows only the
 * handshake revisions). Stateless: no `initialize`; each POST is one request carrying its version in
 * the `MCP-Protocol-Version` header and in `params._meta`, and `Mcp-Method`/`Mcp-Name` mirroring its
 * body. What is checked, in order, each a JSON-RPC error carrying the request's id:
 *
 * 1. one JSON-RPC request (`jsonrpc: "2.0"`, a `method`, an `id` that is a string or number): else
 *    400 -32600; a notification (no `id`) is 202 with no body (this revision defines none over HTTP);
 * 2. the headers ("Server Validation"): `MCP-Protocol-Version` present and equal to `_meta`'s version
 *    when `_meta` names one, `Mcp-Method` equal to `method`, `Mcp-Name` equal to `params.name` (or
 *    `params.uri`) for `tools/call`, `resources/read`, `prompts/get`, after Base64-sentinel
 *    decoding: else 400 -32020 HeaderMismatch;
 * 3. the version: one this server speaks in this era, else 400 -32022 UnsupportedProtocolVersion
 *    with `data: {supported, requested}`;
 * 4. `_meta` with `protocolVersion` and `clientCapabilities` (`clientInfo` is optional): else 400
 *    -32602;
 * 5. the method: `server/discover`, `tools/list`, `tools/call`; anything else (the removed
 *    `initialize`, `ping`, `logging/setLevel`, …) is 404 -32601.
 *
 * Results carry `resultType: "complete"` and `_meta["io.modelcontextprotocol/serverInfo"]`; the
 * cacheable ones (`server/discover`, `tools/list`) carry `ttlMs` and `cacheScope`.
 */
import type { Request, Response } from 'express';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import {
  META_CLIENT_CAPABILITIES,
  META_PROTOCOL_VERSION,
  META_SERVER_INFO,
  MODERN_VERSIONS,
  SUPPORTED_VERSIONS,
} from './versions.js';

export const HEADER_MISMATCH = -32020;
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** Methods whose `Mcp-Name` header mirrors `params.name` (or `params.uri`). */
const NAMED_METHODS = new Set(['tools/call', 'resources/read', 'prompts/get']);

export type RpcId = string | number;
export interface ModernRequest {
  id: RpcId;
  method: string;
  params: Record<string, unknown>;
}
export type Refusal = { status: number; body: ReturnType<typeof rpcError> } | { status: 202; body?: undefined };

export interface ModernServer {
  serverInfo: { name: string; version: string; title?: string };
  capabilities: Record<string, unknown>;
  instructions: string;
  /** Caching hints of `tools/list` (its tools follow the credential's scopes: private). */
  toolsCache: { ttlMs: number; cacheScope: 'public' | 'private' };
  discoverCache: { ttlMs: number; cacheScope: 'public' | 'private' };
  listTools(req: Request): Promise<{ tools: unknown[] }>;
  callTool(req: Request, params: Record<string, unknown>): Promise<Record<string, unknown>>;
}

export function rpcError(id: RpcId | null, code: number, message: string, data?: unknown) {
  return { jsonrpc: '2.0' as const, id, error: { code, message, ...(data === undefined ? {} : { data }) } };
}

/** The request, or why it is refused (steps 1 to 4 above). */
export function checkModern(req: Request): { request: ModernRequest } | { refusal: Refusal } {
  const body = req.body as Record<string, unknown> | unknown[] | null | undefined;
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    return refuse(400, null, ErrorCode.InvalidRequest, 'Invalid Request: the body must be one JSON-RPC request object (MCP 2026-07-28 has no batches).');
  }
  const rawId = body.id;
  const id = typeof rawId === 'string' || (typeof rawId === 'number' && Number.isFinite(rawId)) ? rawId : null;
  if (body.jsonrpc !== '2.0' || typeof body.method !== 'string') {
    return refuse(400, id, ErrorCode.InvalidRequest, 'Invalid Request: a JSON-RPC 2.0 request has `jsonrpc: "2.0"` and a string `method`.');
  }
  if (!('id' in body)) return { refusal: { status: 202 } };
  if (id === null) return refuse(400, null, ErrorCode.InvalidRequest, 'Invalid Request: the id must be a string or a number, never null.');
  const method = body.method;
  if (body.params !== undefined && (typeof body.params !== 'object' || body.params === null || Array.isArray(body.params))) {
    return refuse(400, id, ErrorCode.InvalidParams, 'Invalid params: `params` must be an object.');
  }
  const params = (body.params ?? {}) as Record<string, unknown>;
  const meta = params._meta && typeof params._meta === 'object' && !Array.isArray(params._meta) ? (params._meta as Record<string, unknown>) : undefined;

  const version = single(req.headers['mcp-protocol-version']);
  if (version === undefined) return mismatch(id, 'the MCP-Protocol-Version header is required.');
  const metaVersion = meta?.[META_PROTOCOL_VERSION];
  if (metaVersion !== undefined && metaVersion !== version) {
    return mismatch(id, `MCP-Protocol-Version header value '${shown(version)}' does not match _meta's '${shown(String(metaVersion))}'.`);
  }
  if (!MODERN_VERSIONS.includes(version)) {
    return refuse(400, id, UNSUPPORTED_PROTOCOL_VERSION, 'Unsupported protocol version', { supported: SUPPORTED_VERSIONS, requested: version });
  }
  const methodHeader = single(req.headers['mcp-method']);
  if (methodHeader === undefined) return mismatch(id, 'the Mcp-Method header is required.');
  if (methodHeader !== method) return mismatch(id, `Mcp-Method header value '${shown(methodHeader)}' does not match body value '${shown(method)}'.`);
  if (NAMED_METHODS.has(method)) {
    const source = method === 'resources/read' ? params.uri : params.name;
    const nameHeader = single(req.headers['mcp-name']);
    if (nameHeader === undefined) return mismatch(id, `the Mcp-Name header is required for ${method}.`);
    const decoded = decodeHeaderValue(nameHeader);
    if (decoded === undefined) return mismatch(id, 'the Mcp-Name header is not a valid header value (plain visible ASCII, or =?base64?…?=).');
    if (typeof source !== 'string' || decoded !== source) {
      return mismatch(id, `Mcp-Name header value '${shown(decoded)}' does not match body value '${shown(String(source))}'.`);
    }
  }
  const caps = meta?.[META_CLIENT_CAPABILITIES];
  if (!meta || typeof metaVersion !== 'string' || !caps || typeof caps !== 'object' || Array.isArray(caps)) {
    return refuse(400, id, ErrorCode.InvalidParams, `Invalid params: params._meta must carry "${META_PROTOCOL_VERSION}" and "${META_CLIENT_CAPABILITIES}" (MCP 2026-07-28 has no initialize; each request says them).`);
  }
  return { request: { id, method, params } };
}

/** Step 5: the method's answer, written to `res`. */
export async function answerModern(req: Request, res: Response, request: ModernRequest, server: ModernServer): Promise<void> {
  const { id, method, params } = request;
  const complete = (result: Record<string, unknown>) => {
    const meta = { ...((result._meta as Record<string, unknown> | undefined) ?? {}), [META_SERVER_INFO]: server.serverInfo };
    res.status(200).json({ jsonrpc: '2.0', id, result: { ...result, resultType: 'complete', _meta: meta } });
  };
  try {
    if (method === 'server/discover') {
      return complete({ supportedVersions: SUPPORTED_VERSIONS, capabilities: server.capabilities, instructions: server.instructions, ...server.discoverCache });
    }
    if (method === 'tools/list') return complete({ ...(await server.listTools(req)), ...server.toolsCache });
    if (method === 'tools/call') return complete(await server.callTool(req, params));
  } catch (e) {
    // A handler's JSON-RPC error (an unknown tool, an unknown project): a 200 as the legacy era answers it.
    const { code, message, data } = e as { code?: unknown; message?: string; data?: unknown };
    if (typeof code === 'number' && Number.isInteger(code)) return void res.status(200).json(rpcError(id, code, message ?? 'Error', data));
    throw e;
  }
  res.status(404).json(rpcError(id, ErrorCode.MethodNotFound, `Method not found: ${shown(method)} (MCP 2026-07-28 here serves server/discover, tools/list and tools/call).`));
}

/**
 * A header value as the transport's "Value Encoding" says: `=?base64?…?=` is the Base64 of the
 * UTF-8 value; anything else is the value itself and must be visible ASCII or spaces. Undefined when
 * neither.
 */
export function decodeHeaderValue(value: string): string | undefined {
  if (value.startsWith('=?base64?') && value.endsWith('?=') && value.length >= 11) {
    // A sentinel that is not Base64 is malformed, not a literal (clients must encode such literals).
    const b64 = value.slice(9, -2);
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) return undefined;
    const text = Buffer.from(b64, 'base64').toString('utf8');
    return text.includes('\uFFFD') ? undefined : text;
  }
  return /^[\x20-\x7e\t]*$/.test(value) ? value : undefined;
}

/** One header value; a repeated header (Node joins unknown ones with ", ") is taken as it came. */
function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

function refuse(status: number, id: RpcId | null, code: number, message: string, data?: unknown): { refusal: Refusal } {
  return { refusal: { status, body: rpcError(id, code, message, data) } };
}

function mismatch(id: RpcId, what: string): { refusal: Refusal } {
  return refuse(400, id, HEADER_MISMATCH, `Header mismatch: ${what}`);
}

/** A value echoed in a message: printable, bounded. */
function shown(v: string): string {
  return v.replace(/[^\x20-\x7e]/g, '?').slice(0, 100);
}
