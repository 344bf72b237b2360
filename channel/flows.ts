/**
 * The Cloud API's Flows endpoints, through the CloudApiClient (its deadlines, token handling and
 * error mapping): create a flow, upload its Flow JSON asset and read back the validation errors,
 * read a flow, publish, deprecate.
 *
 * Meta's upload answers `success: true` even for an invalid Flow JSON and lists the problems in
 * `validation_errors`; they are returned as they came, for the caller to store and show.
 */
import { randomBytes } from 'node:crypto';
import type { CallSpec, ChannelCredentials } from './graph-transport.js';
import type { ChannelError, ChannelOperation } from './errors.js';
import type { ChannelFlow, FlowValidationError } from '../lib/channel-port/port.js';

/** What these calls need of the client (channel/cloud-api.ts: CloudApiClient). */
export interface GraphCaller {
  graph(creds: ChannelCredentials, spec: CallSpec): Promise<unknown>;
  unexpectedAnswer(op: ChannelOperation, why: string): ChannelError;
}

/** The Graph names of the port's flow shapes. */
export type GraphFlowValidationError = FlowValidationError;
export type GraphFlow = ChannelFlow;

const FLOW_FIELDS = 'id,name,status,categories,validation_errors,json_version,data_api_version,preview';

function validationErrors(v: unknown): FlowValidationError[] {
  return Array.isArray(v) ? (v.filter((x) => x && typeof x === 'object') as FlowValidationError[]) : [];
}

/** A multipart/form-data body of text fields and at most one file, as Meta's Flows calls take it. */
function multipart(fields: Record<string, string>, file?: { field: string; filename: string; type: string; content: string }): { body: Buffer; contentType: string } {
  const boundary = `----service${randomBytes(16).toString('hex')}`;
  const parts = Object.entries(fields).map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  const chunks = [Buffer.from(parts.join(''))];
  if (file) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${file.field}"; filename="${file.filename}"\r\nContent-Type: ${file.type}\r\n\r\n`));
    chunks.push(Buffer.from(file.content, 'utf8'), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * POST /{version}/{wabaId}/flows → the flow's id. Meta publishes this call as multipart/form-data
 * with `categories` a JSON list in a string field.
 */
export async function createFlow(client: GraphCaller, creds: ChannelCredentials, input: { name: string; categories: string[] }): Promise<{ id: string }> {
  const form = multipart({ name: input.name, categories: JSON.stringify(input.categories) });
  const b = (await client.graph(creds, {
    op: 'createFlow',
    method: 'POST',
    segments: [creds.wabaId, 'flows'],
    data: form.body,
    headers: { 'Content-Type': form.contentType },
  })) as { id?: unknown };
  const id = typeof b?.id === 'string' ? b.id : typeof b?.id === 'number' ? String(b.id) : undefined;
  if (!id) throw client.unexpectedAnswer('createFlow', 'no flow id in the answer');
  return { id };
}

/**
 * POST /{version}/{flowId}/assets as multipart (name flow.json, asset_type FLOW_JSON, file) →
 * the channel's validation errors (empty when it found none).
 */
export async function uploadFlowJson(client: GraphCaller, creds: ChannelCredentials, flowId: string, json: string): Promise<{ validationErrors: FlowValidationError[] }> {
  const form = multipart({ name: 'flow.json', asset_type: 'FLOW_JSON' }, { field: 'file', filename: 'flow.json', type: 'application/json', content: json });
  const b = (await client.graph(creds, {
    op: 'uploadFlowAsset',
    method: 'POST',
    segments: [flowId, 'assets'],
    data: form.body,
    headers: { 'Content-Type': form.contentType },
    upload: true,
  })) as { success?: unknown; validation_errors?: unknown };
  if (b?.success !== true && b?.validation_errors === undefined) throw client.unexpectedAnswer('uploadFlowAsset', 'neither success nor validation_errors in the answer');
  return { validationErrors: validationErrors(b.validation_errors) };
}

/** GET /{version}/{flowId}?fields=… */
export async function getFlow(client: GraphCaller, creds: ChannelCredentials, flowId: string): Promise<ChannelFlow> {
  const b = (await client.graph(creds, { op: 'getFlow', method: 'GET', segments: [flowId], params: { fields: FLOW_FIELDS } })) as Record<string, unknown>;
  if (typeof b?.id !== 'string') throw client.unexpectedAnswer('getFlow', 'no flow id in the answer');
  return { ...b, id: b.id, validation_errors: validationErrors(b.validation_errors) } as ChannelFlow;
}

/** POST /{version}/{flowId}/publish (irreversible). */
export async function publishFlow(client: GraphCaller, creds: ChannelCredentials, flowId: string): Promise<void> {
  await client.graph(creds, { op: 'publishFlow', method: 'POST', segments: [flowId, 'publish'] });
}

/** POST /{version}/{flowId}/deprecate */
export async function deprecateFlow(client: GraphCaller, creds: ChannelCredentials, flowId: string): Promise<void> {
  await client.graph(creds, { op: 'deprecateFlow', method: 'POST', segments: [flowId, 'deprecate'] });
}
