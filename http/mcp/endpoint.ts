/**
 * The MCP server at /mcp: Streamable HTTP, dual-era, stateless (each POST carries its own
 * credential; a handshake revision's request that needs the official SDK gets its own short-lived
 * SDK server and transport), so any instance behind a load balancer answers any request and there
 * is no session to lose or forge.
 *
 * Order: the Origin rule (lib/mcp/origin.ts: a present Origin that is not this service's or one of
 * MCP_ALLOWED_ORIGINS is 403, the DNS-rebinding defence), CORS for browser clients, the
 * bearer (401 with the protected-resource metadata in WWW-Authenticate, RFC 9728), the body (its
 * limit the contract's largest plus room for JSON; a JSON-RPC batch is answered only at MCP
 * 2025-03-26, the one revision that had them), no sessions (a legacy request with a Mcp-Session-Id,
 * never issued, is 404), then the SDK (its `tools/list` and `tools/call` answered
 * without it when well-formed: http/mcp/direct.ts), or, at MCP 2026-07-28, our own transport
 * (http/mcp/modern.ts). Tools come from the contract
 * (http/mcp/tools.ts) and run through the HTTP pipeline itself (http/mcp/call.ts); the answer is
 * compressed when the client accepts it (http/mcp/compress.ts).
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { IncomingMessage, RequestListener } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AppDeps } from '../app-deps.js';
import { bearerResolver } from '../../middleware/authenticate.js';
import { selectGrant } from '../../middleware/project.js';
import { ApiError } from '../../lib/platform/errors.js';
import type { Credential } from '../../lib/access/types.js';
import { MCP_PATH, mcpResourceUrl, protectedResourceMetadataUrl, reachedBaseUrl } from '../../lib/mcp/resource.js';
import { bearerChallenge } from '../../lib/oauth/challenge.js';
import { sameResource, STARTER_SCOPES } from '../../lib/oauth/rules.js';
import { stepUpScopes } from '../../middleware/scopes.js';
import { originRule } from '../../lib/mcp/origin.js';
import { PROJECT_ARG, SHARED_ARGS, toolsFromContract, type ToolDef } from './tools.js';
import { callTool, type ToolOutcome } from './call.js';
import { compressAnswer } from './compress.js';
import { answerModern, checkModern, rpcError } from './modern.js';
import { answerDirect, directRequest } from './direct.js';
import { isModern } from './versions.js';

const SERVER_INFO = { name: 'service-api', title: 'WhatsApp messaging-automation API', version: '1' };
/** The meta-tool that describes the tools a long list leaves out. */
const DESCRIBE_TOOLS = 'describeTools';
/**
 * The generic tool that calls another by name: hosts let a model call only what tools/list listed,
 * so the tools a long list leaves out are reached through this listed one.
 */
const CALL_TOOL = 'callTool';
const INSTRUCTIONS =
  'WhatsApp messaging for a business: each tool is one operation of its API, with the scopes it names. Arguments many tools share: ' +
  Object.entries(SHARED_ARGS).map(([arg, text]) => `\`${arg}\`, ${text}`).join('; ') +
  '. A failure is a tool error whose text is {"error":{"code","message"}} with the API\'s error code. ' +
  `When the list would be too long for your context, some groups are not listed: \`${DESCRIBE_TOOLS}\` gives their tools' descriptions and arguments, and \`${CALL_TOOL}\` with \`{"name": "<tool>", "arguments": {…}}\` calls one of them (as calling it by name would, where the host allows that).`;

/** Tools only; no list-changed notifications (2026-07-28 would deliver them on subscriptions/listen). */
const CAPABILITIES = { tools: { listChanged: false } };
/** Caching hints (MCP 2026-07-28): what a deploy or a new grant may change, minutes; the server's own description, an hour. */
const TOOLS_TTL_MS = 5 * 60_000;
const DISCOVER_TTL_MS = 60 * 60_000;

/** Room over the largest operation body for JSON escaping and the JSON-RPC frame. */
const FRAME_ALLOWANCE = 256 * 1024;

export function mcpRoutes(deps: AppDeps, app: () => RequestListener): RequestHandler {
  const tools = toolsFromContract(deps.contract);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const resource = mcpResourceUrl(deps.config.publicBaseUrl);
  const resolve = bearerResolver(deps);
  const maxBody = Math.max(...[...deps.contract.operations.values()].map((o) => o.bodyLimit));
  const json = express.json({ limit: Math.ceil(maxBody * 1.5) + FRAME_ALLOWANCE });
  // One validator for every request's server: the SDK would otherwise build an Ajv per server.
  const jsonSchemaValidator = new AjvJsonSchemaValidator();
  const origins = originRule(deps.config.publicBaseUrl, deps.config.mcpAllowedOrigins);

  const refuse = (req: Request, res: Response, e: ApiError) => {
    if (e.status === 401) {
      const refused = e.code === 'invalid_token' ? { error: 'invalid_token' as const, description: e.message } : {};
      const resourceMetadataUrl = protectedResourceMetadataUrl(reachedBaseUrl(deps.config.publicBaseUrl, req.headers.host));
      res.setHeader('WWW-Authenticate', bearerChallenge({ resourceMetadataUrl, ...refused, scope: STARTER_SCOPES }));
    }
    if (e.headers) res.set(e.headers);
    res.status(e.status).json({ success: false, error: { code: e.code, message: e.message }, request_id: req.requestId });
  };

  const handle = async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (answeredBeforeAuth(req, res, origins)) return;
    let credential: Credential;
    try {
      credential = await resolve(req);
      // An operator-issued token (no resource) is good for any; an OAuth token only for this server.
      if (credential.kind === 'access_token' && credential.resource && !sameResource(credential.resource, resource)) {
        throw new ApiError('invalid_token', 'The access token was issued for another resource.');
      }
    } catch (e) {
      if (e instanceof ApiError) return refuse(req, res, e);
      return next(e);
    }
    json(req, res, (err?: unknown) => {
      if (err) {
        const type = (err as { type?: string }).type;
        if (type === 'entity.too.large') return void res.status(413).json(rpcError(null, ErrorCode.InvalidRequest, 'Request too large.'));
        if (type === 'entity.parse.failed') return void res.status(400).json(rpcError(null, ErrorCode.ParseError, 'Parse error: the body is not JSON.'));
        if (type === 'charset.unsupported' || type === 'encoding.unsupported') return void res.status(415).json(rpcError(null, ErrorCode.InvalidRequest, 'Unsupported encoding.'));
        return next(err);
      }
      const version = req.headers['mcp-protocol-version'];
      if (Array.isArray(req.body) && !batchesAllowed(version)) {
        return void res.status(400).json(rpcError(null, ErrorCode.InvalidRequest, 'Invalid Request: JSON-RPC batches are not supported at this protocol version (MCP 2025-06-18 removed them); send one message per request.'));
      }
      if (isModern(version, req.body)) return void serveModern(req, res, credential).catch(next);
      // 2026-07-28 says to ignore a session id; the legacy revisions' stateless server answers 404.
      if (req.headers['mcp-session-id'] !== undefined) {
        return void res.status(404).json(rpcError(idOf(req.body), -32001, 'Session not found: this server issues no sessions; send requests without Mcp-Session-Id.'));
      }
      if (stepUp(req, res, credential)) return;
      serve(req, res, credential).catch(next);
    });
  };

  const stepUp = (req: Request, res: Response, credential: Credential) => answerStepUp(deps, byName, req, res, credential);

  const listTools = (req: Request, credential: Credential) => ({ tools: toolList(visibleTools(tools, credential, req.headers['x-service-project'])).listed });

  /** A tools/call, either era: its result, or a thrown JSON-RPC error (an unknown tool). */
  const runTool = async (req: Request, credential: Credential, params: { name?: unknown; arguments?: unknown }): Promise<CallToolResult> => {
    const projectHeader = typeof req.headers['x-service-project'] === 'string' ? req.headers['x-service-project'] : undefined;
    const target = targetOf(params.name, params.arguments);
    if ('refused' in target) return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: { code: 'invalid_request', message: target.refused } }) }] };
    if (target.name === DESCRIBE_TOOLS) return describeTools(visibleTools(tools, credential, req.headers['x-service-project']), target.arguments);
    const tool = byName.get(target.name);
    if (!tool) throw protocolError(ErrorCode.InvalidParams, `Unknown tool: ${String(target.name).slice(0, 100)}`);
    const started = process.hrtime.bigint();
    const outcome = await callTool(app(), tool, target.arguments, {
      authorization: req.headers.authorization!,
      projectHeader,
      remoteAddress: req.socket?.remoteAddress,
      forwarded: forwardedOf(req),
    });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const result = outcome.ok ? 'ok' : outcome.error.code;
    deps.metrics?.toolCall(tool.name, result);
    // As the operation's own access line: ids and outcome, never arguments.
    deps.logger.info('mcp tool call', {
      tool: tool.name,
      outcome: result,
      duration_ms: ms,
      request_id: outcome.ok ? outcome.requestId : outcome.error.request_id,
      mcp_request_id: req.requestId,
      credential_id: credential.id,
    });
    return resultOf(tool, outcome.ok || outcome.error.code !== 'project_required' ? outcome : projectRequired(outcome, credential));
  };

  const serve = async (req: Request, res: Response, credential: Credential): Promise<void> => {
    const direct = directRequest(req);
    if (direct) {
      compressAnswer(req, res);
      return answerDirect(res, direct.id, async () => (direct.method === 'tools/list' ? listTools(req, credential) : runTool(req, credential, direct.params)));
    }
    const server = new Server(SERVER_INFO, { capabilities: CAPABILITIES, instructions: INSTRUCTIONS, jsonSchemaValidator });
    server.setRequestHandler(ListToolsRequestSchema, async () => listTools(req, credential));
    server.setRequestHandler(CallToolRequestSchema, async (request) => runTool(req, credential, request.params));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    compressAnswer(req, res);
    await transport.handleRequest(req as unknown as IncomingMessage, res, req.body);
  };

  /** MCP 2026-07-28 (http/mcp/modern.ts): the checks, the step-up challenge for a call, the answer. */
  const serveModern = async (req: Request, res: Response, credential: Credential): Promise<void> => {
    const checked = checkModern(req);
    if ('refusal' in checked) {
      const { status, body } = checked.refusal;
      return void (body ? res.status(status).json(body) : res.status(status).end());
    }
    if (stepUp(req, res, credential)) return;
    compressAnswer(req, res);
    await answerModern(req, res, checked.request, {
      serverInfo: SERVER_INFO,
      capabilities: CAPABILITIES,
      instructions: INSTRUCTIONS,
      // The list follows the token's scopes and project: private, and fresh for minutes (tools change on deploy).
      toolsCache: { ttlMs: TOOLS_TTL_MS, cacheScope: 'private' },
      discoverCache: { ttlMs: DISCOVER_TTL_MS, cacheScope: 'public' },
      listTools: async (r) => listTools(r, credential),
      callTool: async (r, params) => ({ ...(await runTool(r, credential, params as { name?: unknown; arguments?: unknown })) }),
    });
  };

  return (req, res, next) => (req.path === MCP_PATH || req.path === `${MCP_PATH}/` ? void handle(req, res, next).catch(next) : next());
}

/** The origin check, CORS and the methods other than POST: true when the request is answered here. */
function answeredBeforeAuth(req: Request, res: Response, origins: ReturnType<typeof originRule>): boolean {
  if (!origins.allows(req.headers.origin)) {
    res.status(403).json(rpcError(null, ErrorCode.InvalidRequest, originRefusal(req.headers.origin)));
    return true;
  }
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Expose-Headers', 'WWW-Authenticate, Mcp-Session-Id, Mcp-Protocol-Version, X-Request-Id');
  if (req.method === 'OPTIONS') {
    res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, X-Service-Project, Last-Event-ID');
    res.status(204).end();
    return true;
  }
  if (req.method !== 'POST') {
    // Stateless: no server-initiated stream to GET, no session to DELETE.
    res.setHeader('Allow', 'POST, OPTIONS');
    res.status(405).json(rpcError(null, ErrorCode.ConnectionClosed, 'Method not allowed: this MCP server is stateless and answers POST only.'));
    return true;
  }
  return false;
}

/**
 * A tool call of an OAuth client whose token lacks the operation's scopes on the project it names:
 * HTTP 403 with the step-up challenge (MCP 2025-11-25, "Scope Challenge Handling"), which the SDK's
 * client answers by authorizing again for those scopes, instead of a tool error in a 200 that no
 * client acts on. Operator-issued tokens and `pk_` keys, which no authorization can widen, keep the
 * tool error `insufficient_scope`. Anything else (the project unknown or ambiguous) is left to the
 * call, which answers it as over HTTP.
 */
function answerStepUp(deps: AppDeps, byName: Map<string, ToolDef>, req: Request, res: Response, credential: Credential): boolean {
  const message = req.body as { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: Record<string, unknown> } } | undefined;
  if (credential.kind !== 'access_token' || !credential.clientId || message?.method !== 'tools/call') return false;
  // Through callTool, the tool it names is the one judged: the same challenge as calling it by name.
  const target = targetOf(message.params?.name, message.params?.arguments);
  if ('refused' in target) return false;
  const tool = byName.get(target.name);
  if (!tool || !tool.operation.projectScoped || tool.operation.requiredScopes.length === 0) return false;
  const named = (target.arguments as Record<string, unknown> | undefined)?.[PROJECT_ARG];
  let held: string[];
  try {
    held = selectGrant(credential, typeof named === 'string' ? named : req.headers['x-service-project'], tool.operation.method.toUpperCase()).scopes;
  } catch {
    return false;
  }
  const missing = tool.operation.requiredScopes.filter((s) => !held.includes(s));
  if (missing.length === 0) return false;
  const description = `${tool.name} needs the scope ${missing.join(', ')}; authorize again to add it.`;
  const resourceMetadataUrl = protectedResourceMetadataUrl(reachedBaseUrl(deps.config.publicBaseUrl, req.headers.host));
  res.setHeader('WWW-Authenticate', bearerChallenge({ resourceMetadataUrl, error: 'insufficient_scope', scope: stepUpScopes(held, tool.operation.requiredScopes), description }));
  const id = typeof message.id === 'string' || typeof message.id === 'number' ? message.id : null;
  res.status(403).json({ jsonrpc: '2.0', id, error: { code: ErrorCode.InvalidRequest, message: description, data: { code: 'insufficient_scope', required: tool.operation.requiredScopes, missing } } });
  return true;
}

/**
 * Batches are part of MCP 2025-03-26 only (added there, removed in 2025-06-18). A stateless server
 * knows the negotiated version from the Mcp-Protocol-Version header alone; without one, 2025-06-18
 * says to assume 2025-03-26, whose clients never send it.
 */
const BATCH_VERSION = '2025-03-26';
function batchesAllowed(version: string | string[] | undefined): boolean {
  return version === undefined || version === BATCH_VERSION;
}

/** The tools the credential may call on the project the header (or the default) selects. */
function visibleTools(tools: ToolDef[], credential: Credential, header: string | string[] | undefined): ToolDef[] {
  let scopes: Set<string>;
  try {
    scopes = new Set(selectGrant(credential, header, 'GET').scopes);
  } catch (e) {
    if (e instanceof ApiError) throw protocolError(ErrorCode.InvalidRequest, `${e.code}: ${e.message}`, { code: e.code });
    throw e;
  }
  return tools.filter((t) => !t.operation.projectScoped || t.operation.requiredScopes.every((s) => scopes.has(s)));
}

/**
 * What tools/list may cost an agent (bytes of the JSON answer): about 10,000 tokens. A credential
 * whose tools fit is listed in full; otherwise the core groups (CORE_GROUPS: messages, conversations
 * and contacts, a conversation with customers) first, then each other group of GROUP_ORDER that fits, and `describeTools` for the
 * rest. Every tool stays callable by name, listed or not.
 */
export const TOOL_LIST_BUDGET = 40_000;
const CORE_GROUPS = ['Meta', 'Projects', 'Messages', 'Conversations', 'Contacts'];
const GROUP_ORDER = ['Templates', 'Broadcasts', 'Media', 'Segments', 'Webhooks', 'Tables', 'Flows', 'Code'];

const sizeOf = new WeakMap<ToolDef, number>();
function bytesOf(t: ToolDef): number {
  let n = sizeOf.get(t);
  if (n === undefined) sizeOf.set(t, (n = Buffer.byteLength(JSON.stringify(listed(t))) + 1));
  return n;
}

function toolList(visible: ToolDef[]): { listed: ReturnType<typeof listed>[]; left: Map<string, ToolDef[]> } {
  const frame = 200; // {"result":{"tools":[…]},"jsonrpc":"2.0","id":…}
  if (visible.reduce((n, t) => n + bytesOf(t), frame) <= TOOL_LIST_BUDGET) return { listed: visible.map(listed), left: new Map() };
  const groups = new Map<string, ToolDef[]>();
  for (const t of visible) groups.set(t.group, [...(groups.get(t.group) ?? []), t]);
  const order = [...CORE_GROUPS, ...GROUP_ORDER, ...[...groups.keys()].filter((g) => !CORE_GROUPS.includes(g) && !GROUP_ORDER.includes(g)).sort()];
  const chosen: ToolDef[] = [];
  const left = new Map<string, ToolDef[]>();
  let used = frame + DESCRIBE_RESERVE;
  for (const g of order) {
    const list = groups.get(g);
    if (!list) continue;
    const size = list.reduce((n, t) => n + bytesOf(t), 0);
    if (CORE_GROUPS.includes(g) || used + size <= TOOL_LIST_BUDGET) {
      chosen.push(...list);
      used += size;
    } else {
      left.set(g, list);
    }
  }
  const all = chosen.sort((a, b) => a.name.localeCompare(b.name)).map(listed);
  return { listed: left.size ? [...all, callToolTool(), describeToolsTool(left)] : all, left };
}

/** Room kept for `describeTools` and `callTool` themselves. */
const DESCRIBE_RESERVE = 2000;

/**
 * The tool a tools/call runs and its arguments: the named one, or, for `callTool`, the one its
 * `name` names with its `arguments`, so both ways meet the same checks and errors. A `callTool` of
 * the wrong shape is refused (a tool error, as arguments of the wrong shape are).
 */
function targetOf(name: unknown, args: unknown): { name: string; arguments: unknown } | { refused: string } {
  if (name !== CALL_TOOL) return { name: String(name), arguments: args };
  const a = (args ?? {}) as Record<string, unknown>;
  if (typeof a !== 'object' || Array.isArray(a) || typeof a.name !== 'string') return { refused: `\`${CALL_TOOL}\` needs \`name\`, the tool to call (a string), and its \`arguments\` (an object).` };
  const unknown = Object.keys(a).filter((k) => k !== 'name' && k !== 'arguments');
  if (unknown.length) return { refused: `Unknown argument${unknown.length > 1 ? 's' : ''} of \`${CALL_TOOL}\`: ${unknown.slice(0, 5).join(', ')}; put the tool's own in \`arguments\`.` };
  // No nesting: a callTool of callTool would only hide the tool called.
  if (a.name === CALL_TOOL) return { refused: `\`${CALL_TOOL}\` calls another tool, not itself.` };
  return { name: a.name, arguments: a.arguments };
}

function callToolTool() {
  return {
    name: CALL_TOOL,
    title: 'Call a tool by name',
    description: `Calls any tool, listed or not, with its arguments: \`{"name": "sendMessage", "arguments": {…}}\`. The same checks, scopes, errors and result as calling it directly. Learn a tool's arguments with \`${DESCRIBE_TOOLS}\` first.`,
    inputSchema: {
      type: 'object' as const,
      additionalProperties: false,
      required: ['name'],
      properties: {
        name: { type: 'string', description: 'The tool to call.' },
        arguments: { type: 'object', description: 'Its arguments, as its input schema says.' },
      },
    },
    // What a call does is the named tool's: nothing can be promised for all of them.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  };
}

function describeToolsTool(left: Map<string, ToolDef[]>) {
  const groups = [...left].map(([g, list]) => `${g} (${list.map((t) => t.name).join(', ')})`).join('; ');
  return {
    name: DESCRIBE_TOOLS,
    title: 'Describe the tools not listed',
    description: `Gives the description and arguments of tools left out of this list to keep it short; then call one with \`${CALL_TOOL}\` ({"name", "arguments"}). Not listed: ${groups}.`,
    inputSchema: {
      type: 'object' as const,
      additionalProperties: false,
      properties: {
        group: { type: 'string', enum: [...left.keys()] },
        names: { type: 'array', items: { type: 'string' }, maxItems: 20 },
      },
    },
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  };
}

/** `describeTools`: the listed form of the visible tools of a group, or of the names asked for. */
function describeTools(visible: ToolDef[], rawArgs: unknown): CallToolResult {
  const args = (rawArgs ?? {}) as { group?: unknown; names?: unknown };
  const names = Array.isArray(args.names) ? args.names.filter((n): n is string => typeof n === 'string').slice(0, 20) : [];
  const group = typeof args.group === 'string' ? args.group : undefined;
  if (!group && names.length === 0) {
    return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: { code: 'invalid_request', message: 'Name a `group` or some tool `names`.' } }) }] };
  }
  const found = visible.filter((t) => (group !== undefined && t.group === group) || names.includes(t.name)).map(listed);
  const data = { tools: found };
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
}

/**
 * A tool as listed: no output schema (the API's response schemas are most of the contract, 142 KB
 * for the 63 tools; the result still carries the data as `structuredContent` and as text).
 */
function listed(t: ToolDef) {
  return { name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations };
}

function resultOf(tool: ToolDef, outcome: ToolOutcome): CallToolResult {
  if (!outcome.ok) return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: outcome.error }) }] };
  const structured = tool.outputSchema && outcome.data && typeof outcome.data === 'object' && !Array.isArray(outcome.data);
  return {
    content: [{ type: 'text', text: JSON.stringify(outcome.data) }],
    ...(structured ? { structuredContent: outcome.data as Record<string, unknown> } : {}),
  };
}

const FORWARDED = ['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host'];

function forwardedOf(req: Request): Record<string, string> | undefined {
  let out: Record<string, string> | undefined;
  for (const name of FORWARDED) {
    const v = req.headers[name];
    if (typeof v === 'string') (out ??= {})[name] = v;
  }
  return out;
}

/**
 * A JSON-RPC error a request handler throws: its message as said, once. (The SDK's McpError puts
 * "MCP error <code>: " in its own message, and the client's McpError adds it again.)
 */
function protocolError(code: number, message: string, data?: unknown): Error {
  return Object.assign(new Error(message), { code, ...(data === undefined ? {} : { data }) });
}

/** An agent cannot set X-Service-Project: it names the project with the tool's `project` argument. */
function projectRequired(outcome: Extract<ToolOutcome, { ok: false }>, credential: Credential): ToolOutcome {
  const projects = credential.grants.map((g) => g.project.id);
  const message = `This connection reaches several projects: name one with the tool's \`project\` argument (one of: ${projects.slice(0, 20).join(', ')}).`;
  return { ok: false, error: { ...outcome.error, message, details: { argument: 'project', projects } } };
}

function originRefusal(origin: string | string[] | undefined): string {
  const shown = (Array.isArray(origin) ? origin.join(', ') : String(origin)).replace(/[^\x20-\x7e]/g, '?').slice(0, 200);
  return `Forbidden: requests from the web origin ${shown} are not allowed (Origin must be this service's own or one of MCP_ALLOWED_ORIGINS).`;
}

/** The id of a single request, for an error about it; null when there is none to read. */
function idOf(body: unknown): string | number | null {
  const id = body && typeof body === 'object' && !Array.isArray(body) ? (body as { id?: unknown }).id : undefined;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}
