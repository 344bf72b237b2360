/**
 * The MCP tools, read from the contract: one tool per secured `/v1` operation, so adding an
 * operation to openapi.yaml adds its tool with no other change. Name from the operationId,
 * description from the summary and description, input schema from the parameters and the
 * request body, output schema from the success response's `data`, annotations from the method.
 *
 * Arguments: each parameter by name (a header's in snake case: `Idempotency-Key` is
 * `idempotency_key`), the JSON or text request body as `body`, and `project` on every tool for
 * what the X-Service-Project header selects over HTTP. An operation without security (the
 * contract's own document) is not a tool; one whose only body is neither JSON nor text could not
 * be called with JSON arguments and stops start-up until the contract gives it a JSON form.
 */
import type { Contract, OperationInfo } from '../contract.js';
import { resolveSchemaRef, SchemaBundler } from './json-schema.js';

type Schema = Record<string, unknown>;

export interface ParamBinding {
  /** The tool argument. */
  arg: string;
  /** The HTTP name (path template name, query name, header name). */
  name: string;
  in: 'path' | 'query' | 'header';
  /** Set by the MCP layer, not an argument: the `offset` a `cursor` stands for (see `offsetPaged`). */
  internal?: true;
}

export interface ToolDef {
  name: string;
  /** The operation's first tag (`Messages`, `Flows`, …): the group it is listed with. */
  group: string;
  title: string;
  description: string;
  inputSchema: Schema & { type: 'object' };
  outputSchema?: Schema & { type: 'object' };
  annotations: { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
  operation: OperationInfo;
  params: ParamBinding[];
  body?: { contentType: string; required: boolean };
  /**
   * The operation pages by `offset` (with `total`), the tool by `cursor` like every other list: the
   * cursor is an offset made opaque (http/mcp/paging.ts), so a model learns one way to page.
   */
  offsetPaged?: boolean;
}

/** Arguments every tool has besides its operation's own. */
export const PROJECT_ARG = 'project';
export const BODY_ARG = 'body';
export const CURSOR_ARG = 'cursor';
const OFFSET = 'offset';
/** Headers the MCP layer sets itself: never tool arguments. */
const OWN_HEADERS = new Set(['x-service-project', 'authorization', 'content-type', 'accept', 'x-request-id']);

/**
 * Said on every tool as well as in the server's instructions: hosts do not all show a model the
 * instructions, and an argument nothing explains is guessed at.
 */
export const PROJECT_SCHEMA = {
  type: 'string',
  // Its length rule is the X-Service-Project header's, judged by the operation: bytes here are the list's.
  description: 'Project id (see listProjects); optional for reads.',
};

/**
 * The rules of the headers an operation takes, said as the arguments an agent passes (the
 * contract's own words speak of headers and status codes, which an agent cannot act on).
 */
const HEADER_ARGS: Record<string, string> = {
  idempotency_key: 'Any unique string up to 255 characters: a retry with the same key and arguments within 24 hours returns the first answer instead of acting twice.',
  if_match: 'The `etag` of the version you read: the change is refused (precondition_failed) if it changed since.',
  if_none_match: 'The `etag` you hold: the answer says nothing changed when it is still current.',
};

/** Arguments many tools share, described once in the server's instructions rather than on each tool. */
export const SHARED_ARGS: Record<string, string> = {
  [PROJECT_ARG]: 'the project to act on (a project id); optional for reads (the connection\'s default project) and for a credential of one project, required for writes of a connection that reaches several',
  limit: 'page size, 1 to 100 (default 50)',
  cursor: 'the `nextCursor` of the previous page, to read the next one',
};

/** Longest tool description, and longest description inside an input schema (characters). */
export const DESCRIPTION_LIMIT = 400;
export const ARGUMENT_DESCRIPTION_LIMIT = 120;

/** The contract's words for HTTP, as the agent's arguments. */
function inAgentTerms(text: string): string {
  return text
    .replaceAll('X-Service-Project', '`project`')
    .replaceAll('Idempotency-Key', '`idempotency_key`')
    .replaceAll('If-None-Match', '`if_none_match`')
    .replaceAll('If-Match', '`if_match`')
    .replaceAll('``', '`');
}

/** A text's first sentence (or its first `max` characters, at a word), in agent terms. */
export function shortText(text: string, max: number): string {
  const flat = inAgentTerms(text.replace(/\s+/g, ' ').trim());
  const sentence = /^(.+?[.!?])(\s|$)/.exec(flat)?.[1] ?? flat;
  if (sentence.length <= max) return sentence;
  const cut = sentence.slice(0, max - 1);
  return `${cut.slice(0, Math.max(cut.lastIndexOf(' '), max / 2))}…`;
}

/** What says HTTP rather than what the tool does: left out of a fallback description. */
const HTTP_TALK = /\b(header|HTTP|status|[1-5]\d\d|ETag|Content-Type|multipart|query string)\b/i;

export function argName(param: { name: string; in: string }): string {
  return param.in === 'header' ? param.name.toLowerCase().replaceAll('-', '_') : param.name;
}

export function toolsFromContract(contract: Contract): ToolDef[] {
  const doc = contract.document;
  const components: Record<string, Schema> = doc.components?.schemas ?? {};
  const bundler = new SchemaBundler(components, { descriptionLimit: ARGUMENT_DESCRIPTION_LIMIT });
  const tools: ToolDef[] = [];
  for (const op of contract.operations.values()) {
    if (!op.secured || !op.path.startsWith('/v1/')) continue;
    const item = doc.paths[op.path];
    const spec = item[op.method];
    tools.push(toolOf(op, item, spec, doc, bundler));
  }
  return shareSchemas(tools.sort((a, b) => a.name.localeCompare(b.name)));
}

/** A component schema this large, in more than one tool, is spelled out once. */
const SHARED_SCHEMA_BYTES = 200;

/**
 * Shared schemas once: a component schema several tools take (a template send, an audience filter)
 * is spelled out in one tool's `$defs`, its home (the tool whose `body` it is, else the first by
 * name), and in the others' `$defs` it is a stub that names the home and accepts any value (the
 * operation's own validation still judges it). Definitions only a stub reached are dropped.
 */
function shareSchemas(tools: ToolDef[]): ToolDef[] {
  const users = new Map<string, ToolDef[]>();
  for (const t of tools) for (const name of Object.keys(defsOf(t))) users.set(name, [...(users.get(name) ?? []), t]);
  const home = new Map<string, ToolDef>();
  for (const [name, list] of users) {
    if (list.length < 2 || JSON.stringify(defsOf(list[0])[name]).length < SHARED_SCHEMA_BYTES) continue;
    home.set(name, list.find((t) => (t.inputSchema.properties as Record<string, Schema> | undefined)?.[BODY_ARG]?.$ref === `#/$defs/${name}`) ?? list[0]);
  }
  for (const t of tools) {
    const defs = defsOf(t);
    let stubbed = false;
    for (const name of Object.keys(defs)) {
      const owner = home.get(name);
      if (!owner || owner === t) continue;
      defs[name] = { description: `${name}: as in the input schema of \`${owner.name}\` ($defs.${name}).` };
      stubbed = true;
    }
    if (stubbed) pruneDefs(t.inputSchema);
  }
  // Every schema carries only the definitions it reaches, whatever collected them.
  for (const t of tools) pruneDefs(t.inputSchema);
  return tools;
}

function defsOf(t: ToolDef): Record<string, Schema> {
  return ((t.inputSchema as Schema).$defs ?? {}) as Record<string, Schema>;
}

/** Drops the `$defs` not reached, transitively, from the schema's own properties; an empty `$defs` goes too. */
export function pruneDefs(schema: Schema): void {
  const defs = (schema.$defs ?? {}) as Record<string, Schema>;
  const reached = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node as Schema)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/')) {
        const name = v.slice('#/$defs/'.length);
        if (!reached.has(name)) {
          reached.add(name);
          visit(defs[name]);
        }
      } else if (k !== '$defs') visit(v);
    }
  };
  visit(schema);
  for (const name of Object.keys(defs)) if (!reached.has(name)) delete defs[name];
  if (schema.$defs && Object.keys(defs).length === 0) delete schema.$defs;
}

function toolOf(op: OperationInfo, item: Schema, spec: Schema, doc: Record<string, any>, bundler: SchemaBundler): ToolDef {
  const where = `${op.method.toUpperCase()} ${op.path} (${op.operationId})`;
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  const params: ParamBinding[] = [];
  const claim = (arg: string) => {
    if (arg in properties) throw new Error(`MCP tools: ${where} has two arguments named "${arg}"`);
  };

  const parameters = parametersOf(item, spec, doc);
  const offsetPaged = parameters.some((p) => p.in === 'query' && p.name === OFFSET) && !parameters.some((p) => p.in === 'query' && p.name === CURSOR_ARG);
  for (const param of parameters) {
    if (param.in === 'cookie') throw new Error(`MCP tools: ${where} has a cookie parameter, which a tool cannot pass`);
    if (param.in === 'header' && OWN_HEADERS.has(param.name.toLowerCase())) continue;
    if (offsetPaged && param.in === 'query' && param.name === OFFSET) {
      claim(CURSOR_ARG);
      properties[CURSOR_ARG] = { type: 'string' };
      params.push({ arg: OFFSET, name: OFFSET, in: 'query', internal: true });
      continue;
    }
    const arg = argName(param);
    claim(arg);
    const schema = bundler.convert(param.schema ?? { type: 'string' });
    const said = arg in SHARED_ARGS ? undefined : HEADER_ARGS[arg] ?? (param.description ? shortText(String(param.description), ARGUMENT_DESCRIPTION_LIMIT) : undefined);
    properties[arg] = said ? { ...schema, description: said } : schema;
    if (param.required) required.push(arg);
    params.push({ arg, name: param.name, in: param.in });
  }

  let body: ToolDef['body'];
  const requestBody = resolveComponent(spec.requestBody, doc, 'requestBodies');
  if (requestBody) {
    const content: Record<string, { schema?: unknown }> = requestBody.content ?? {};
    const contentType = Object.keys(content).find((t) => t === 'application/json') ?? Object.keys(content).find((t) => t.startsWith('text/'));
    if (!contentType) {
      throw new Error(`MCP tools: ${where} takes only ${Object.keys(content).join(', ')}; give it an application/json form (a file as base64) so its tool can be called`);
    }
    claim(BODY_ARG);
    const schema = bundler.convert(content[contentType].schema ?? {});
    const text = contentType.startsWith('text/') ? `The request body as ${contentType} text.` : undefined;
    properties[BODY_ARG] = text ? { ...schema, description: text } : schema;
    body = { contentType, required: requestBody.required === true };
    if (body.required) required.push(BODY_ARG);
  }

  claim(PROJECT_ARG);
  properties[PROJECT_ARG] = PROJECT_SCHEMA;

  const inputSchema = bundler.bundle({ type: 'object', additionalProperties: false, properties, ...(required.length ? { required } : {}) }) as ToolDef['inputSchema'];
  const outputSchema = outputOf(spec, doc, bundler);

  const summary = String(spec.summary ?? op.operationId).trim();
  const scopes = op.requiredScopes.length ? ` Needs ${op.requiredScopes.join(', ')}.` : '';
  const method = op.method.toUpperCase();
  return {
    name: op.operationId,
    group: String((spec.tags as unknown[] | undefined)?.[0] ?? 'Other'),
    title: summary,
    description: `${offsetPaged ? agentDescription(spec, summary).replaceAll('`offset`', '`cursor`') : agentDescription(spec, summary)}${scopes}`,
    inputSchema,
    outputSchema,
    annotations: annotationsOf(op, spec, method),
    operation: op,
    params,
    body,
    ...(offsetPaged ? { offsetPaged } : {}),
  };
}

/**
 * What the tool does and needs, for an agent: the operation's `x-mcp-description` (written for
 * agents, in terms of the tool's arguments), else its summary and the first sentence of its
 * description unless that sentence speaks of HTTP; at most DESCRIPTION_LIMIT characters.
 */
function agentDescription(spec: Schema, summary: string): string {
  const own = spec['x-mcp-description'];
  if (typeof own === 'string' && own.trim()) return clip(own);
  const first = typeof spec.description === 'string' ? shortText(spec.description, DESCRIPTION_LIMIT - summary.length - 2) : '';
  const sentence = first && !HTTP_TALK.test(first) && !first.endsWith('…') ? ` ${first}` : '';
  return `${summary.replace(/[.]?$/, '.')}${sentence}`;
}

/** A written description over the limit: cut at a word. */
function clip(text: string): string {
  const flat = inAgentTerms(text.replace(/\s+/g, ' ').trim());
  return flat.length <= DESCRIPTION_LIMIT ? flat : `${flat.slice(0, flat.lastIndexOf(' ', DESCRIPTION_LIMIT - 1))}…`;
}

/**
 * The hints, true to the operation (MCP tool annotations): read-only for GET; destructive unless
 * the call only adds (a PUT, PATCH or DELETE, or a POST named update…, delete…, set… or deploy…, may
 * overwrite or remove); idempotent only for GET, PUT and DELETE (a POST that honours an
 * `idempotency_key` repeats itself when called again without one); open world when the call reaches
 * people or systems outside the service (messages customers, submits to Meta), which the contract
 * marks with `x-mcp-open-world: true`.
 */
function annotationsOf(op: OperationInfo, spec: Schema, method: string): ToolDef['annotations'] {
  const readOnly = method === 'GET';
  const overwrites = method === 'PUT' || method === 'PATCH' || method === 'DELETE' || /^(update|delete|set|deploy|put|remove|unassign)[A-Z]/.test(op.operationId);
  return {
    readOnlyHint: readOnly,
    destructiveHint: !readOnly && overwrites,
    idempotentHint: method === 'GET' || method === 'PUT' || method === 'DELETE',
    openWorldHint: spec['x-mcp-open-world'] === true,
  };
}

/** The path item's parameters, overridden by the operation's own (same name and place), references followed. */
function parametersOf(item: Schema, spec: Schema, doc: Record<string, any>): Array<{ name: string; in: ParamBinding['in'] | 'cookie'; required?: boolean; description?: string; schema?: unknown }> {
  const all = new Map<string, any>();
  for (const list of [item.parameters, spec.parameters]) {
    for (const p of (list as unknown[] | undefined) ?? []) {
      const param = resolveComponent(p, doc, 'parameters');
      if (param) all.set(`${param.in}:${param.name}`, param);
    }
  }
  return [...all.values()];
}

function resolveComponent(node: any, doc: Record<string, any>, kind: string): any {
  let n = node;
  for (let hops = 0; n && typeof n.$ref === 'string' && hops < 10; hops++) {
    const prefix = `#/components/${kind}/`;
    if (!n.$ref.startsWith(prefix)) throw new Error(`MCP tools: unsupported reference ${n.$ref}`);
    n = doc.components?.[kind]?.[n.$ref.slice(prefix.length)];
  }
  return n;
}

/** The success response's `data` as an object schema (MCP wants `type: object` at the top). */
function outputOf(spec: Schema, doc: Record<string, any>, bundler: SchemaBundler): ToolDef['outputSchema'] {
  const responses = (spec.responses ?? {}) as Record<string, unknown>;
  const success = Object.entries(responses).find(([status]) => /^2\d\d$/.test(status));
  if (!success) return undefined;
  const response = resolveComponent(success[1], doc, 'responses');
  const envelope = resolveSchemaRef(response?.content?.['application/json']?.schema, doc.components?.schemas ?? {});
  const data = (envelope?.properties as Record<string, unknown> | undefined)?.data;
  if (!data || resolveSchemaRef(data, doc.components?.schemas ?? {})?.type !== 'object') return undefined;
  return bundler.bundle({ type: 'object', allOf: [bundler.convert(data)] }) as ToolDef['outputSchema'];
}
