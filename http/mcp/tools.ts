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
}

export interface ToolDef {
  name: string;
  title: string;
  description: string;
  inputSchema: Schema & { type: 'object' };
  outputSchema?: Schema & { type: 'object' };
  annotations: { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
  operation: OperationInfo;
  params: ParamBinding[];
  body?: { contentType: string; required: boolean };
}

/** Arguments every tool has besides its operation's own. */
export const PROJECT_ARG = 'project';
export const BODY_ARG = 'body';
/** Headers the MCP layer sets itself: never tool arguments. */
const OWN_HEADERS = new Set(['x-service-project', 'authorization', 'content-type', 'accept', 'x-request-id']);

const PROJECT_SCHEMA = {
  type: 'string',
  minLength: 1,
  maxLength: 200,
  description:
    'Project to act on (what the X-Service-Project header selects over HTTP). Optional for reads (the connection\'s default project) and for a credential of one project; required for writes of a connection that reaches several projects.',
};

export function argName(param: { name: string; in: string }): string {
  return param.in === 'header' ? param.name.toLowerCase().replaceAll('-', '_') : param.name;
}

export function toolsFromContract(contract: Contract): ToolDef[] {
  const doc = contract.document;
  const components: Record<string, Schema> = doc.components?.schemas ?? {};
  const bundler = new SchemaBundler(components);
  const tools: ToolDef[] = [];
  for (const op of contract.operations.values()) {
    if (!op.secured || !op.path.startsWith('/v1/')) continue;
    const item = doc.paths[op.path];
    const spec = item[op.method];
    tools.push(toolOf(op, item, spec, doc, bundler));
  }
  return tools.sort((a, b) => a.name.localeCompare(b.name));
}

function toolOf(op: OperationInfo, item: Schema, spec: Schema, doc: Record<string, any>, bundler: SchemaBundler): ToolDef {
  const where = `${op.method.toUpperCase()} ${op.path} (${op.operationId})`;
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  const params: ParamBinding[] = [];
  const claim = (arg: string) => {
    if (arg in properties) throw new Error(`MCP tools: ${where} has two arguments named "${arg}"`);
  };

  for (const param of parametersOf(item, spec, doc)) {
    if (param.in === 'cookie') throw new Error(`MCP tools: ${where} has a cookie parameter, which a tool cannot pass`);
    if (param.in === 'header' && OWN_HEADERS.has(param.name.toLowerCase())) continue;
    const arg = argName(param);
    claim(arg);
    const schema = bundler.convert(param.schema ?? { type: 'string' });
    properties[arg] = param.description ? { ...schema, description: String(param.description).trim() } : schema;
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
  const details = typeof spec.description === 'string' ? spec.description.trim() : '';
  const scopes = op.requiredScopes.length ? `\n\nNeeds the scope${op.requiredScopes.length > 1 ? 's' : ''} ${op.requiredScopes.join(', ')} on the selected project.` : '';
  const method = op.method.toUpperCase();
  return {
    name: op.operationId,
    title: summary,
    description: `${summary}${details ? `\n\n${details}` : ''}${scopes}`,
    inputSchema,
    outputSchema,
    annotations: {
      title: summary,
      readOnlyHint: method === 'GET',
      destructiveHint: method === 'DELETE',
      // PUT and DELETE are idempotent by HTTP's rules; a POST when the contract honours Idempotency-Key.
      idempotentHint: method === 'GET' || method === 'PUT' || method === 'DELETE' || op.idempotent,
      openWorldHint: false,
    },
    operation: op,
    params,
    body,
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
