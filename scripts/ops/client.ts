/**
 * The operator API over Node's fetch, one method per operationId of admin-openapi.yaml, typed from
 * generated/admin-api.ts. Every call either resolves to the envelope's `data` or throws an
 * OpsFailure carrying an error envelope: the server's own, or one made here when the server could
 * not be reached or did not answer with our envelope. The token never appears in a message.
 */
import type { components, operations } from '../../generated/admin-api.js';

export type Schemas = components['schemas'];
type OpName = keyof operations;
type Responses<Op extends OpName> = operations[Op]['responses'];
type JsonOf<R> = R extends { content: { 'application/json': infer J } } ? J : never;
type SuccessJson<Op extends OpName> = JsonOf<Responses<Op>[Extract<keyof Responses<Op>, 200 | 201>]>;
/** The `data` of an operation's success response. */
export type Data<Op extends OpName> = SuccessJson<Op> extends { data: infer D } ? D : never;
/** The JSON request body of an operation. */
export type Body<Op extends OpName> = operations[Op] extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;
/** The query parameters of an operation. */
export type Query<Op extends OpName> = NonNullable<operations[Op]['parameters']['query']>;

/** The server's error envelope; `request_id` is absent when the failure happened before any answer. */
export type FailureEnvelope = Omit<Schemas['ErrorEnvelope'], 'request_id'> & { request_id?: string };

export class OpsFailure extends Error {
  constructor(readonly envelope: FailureEnvelope, readonly status?: number) {
    super(envelope.error.message);
  }
}

export interface ClientConfig {
  /** Base URL of the service, without a trailing slash. */
  baseUrl: string;
  token: string;
  timeoutMs: number;
}

type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
const seg = encodeURIComponent;

export class AdminClient {
  constructor(private readonly config: ClientConfig) {}

  /** Where the service is, for hints such as a ready-to-run curl line. */
  get baseUrl(): string {
    return this.config.baseUrl;
  }

  listProjects = () => this.call('adminListProjects', 'GET', '/admin/projects');
  createProject = (body: Body<'adminCreateProject'>) => this.call('adminCreateProject', 'POST', '/admin/projects', body);
  getProject = (id: string) => this.call('adminGetProject', 'GET', `/admin/projects/${seg(id)}`);
  updateProject = (id: string, body: Body<'adminUpdateProject'>) =>
    this.call('adminUpdateProject', 'PATCH', `/admin/projects/${seg(id)}`, body);
  deleteProject = (id: string) => this.call('adminDeleteProject', 'DELETE', `/admin/projects/${seg(id)}`);

  getChannel = (projectId: string) => this.call('adminGetChannel', 'GET', `/admin/projects/${seg(projectId)}/channel`);
  setChannel = (projectId: string, body: Body<'adminSetChannel'>) =>
    this.call('adminSetChannel', 'PUT', `/admin/projects/${seg(projectId)}/channel`, body);
  listKeys = (projectId: string) => this.call('adminListKeys', 'GET', `/admin/projects/${seg(projectId)}/keys`);
  createKey = (projectId: string, body: Body<'adminCreateKey'>) =>
    this.call('adminCreateKey', 'POST', `/admin/projects/${seg(projectId)}/keys`, body);
  getKey = (id: string) => this.call('adminGetKey', 'GET', `/admin/keys/${seg(id)}`);
  updateKey = (id: string, body: Body<'adminUpdateKey'>) => this.call('adminUpdateKey', 'PATCH', `/admin/keys/${seg(id)}`, body);
  rotateKey = (id: string) => this.call('adminRotateKey', 'POST', `/admin/keys/${seg(id)}/rotate`);
  revokeKey = (id: string) => this.call('adminRevokeKey', 'POST', `/admin/keys/${seg(id)}/revoke`);

  grantDashboardRole = (projectId: string, body: Body<'adminGrantDashboardRole'>) =>
    this.call('adminGrantDashboardRole', 'POST', `/admin/projects/${seg(projectId)}/dashboard-members`, body);

  listConnections = () => this.call('adminListConnections', 'GET', '/admin/connections');
  createConnection = (body: Body<'adminCreateConnection'>) => this.call('adminCreateConnection', 'POST', '/admin/connections', body);
  getConnection = (id: string) => this.call('adminGetConnection', 'GET', `/admin/connections/${seg(id)}`);
  deleteConnection = (id: string) => this.call('adminDeleteConnection', 'DELETE', `/admin/connections/${seg(id)}`);
  attachProject = (id: string, projectId: string, body: Body<'adminAttachProject'>) =>
    this.call('adminAttachProject', 'PUT', `/admin/connections/${seg(id)}/projects/${seg(projectId)}`, body);
  detachProject = (id: string, projectId: string) =>
    this.call('adminDetachProject', 'DELETE', `/admin/connections/${seg(id)}/projects/${seg(projectId)}`);

  listTokens = (connectionId: string) => this.call('adminListTokens', 'GET', `/admin/connections/${seg(connectionId)}/tokens`);
  issueToken = (connectionId: string, body: Body<'adminIssueToken'>) =>
    this.call('adminIssueToken', 'POST', `/admin/connections/${seg(connectionId)}/tokens`, body);
  revokeToken = (id: string) => this.call('adminRevokeToken', 'POST', `/admin/tokens/${seg(id)}/revoke`);

  listRuntimeTokens = (projectId: string) =>
    this.call('adminListRuntimeTokens', 'GET', `/admin/projects/${seg(projectId)}/runtime-tokens`);
  createRuntimeToken = (projectId: string) =>
    this.call('adminCreateRuntimeToken', 'POST', `/admin/projects/${seg(projectId)}/runtime-tokens`);
  revokeRuntimeToken = (id: string) => this.call('adminRevokeRuntimeToken', 'POST', `/admin/runtime-tokens/${seg(id)}/revoke`);

  listWebhookDeliveries = (webhookId: string, query: Query<'adminListWebhookDeliveries'> = {}) =>
    this.call('adminListWebhookDeliveries', 'GET', `/admin/webhooks/${seg(webhookId)}/deliveries${queryString(query)}`);

  listTables = (projectId: string, query: Query<'adminListTables'> = {}) =>
    this.call('adminListTables', 'GET', `/admin/projects/${seg(projectId)}/tables${queryString(query)}`);
  createTable = (projectId: string, body: Body<'adminCreateTable'>) =>
    this.call('adminCreateTable', 'POST', `/admin/projects/${seg(projectId)}/tables`, body);
  runTableDdl = (projectId: string, body: Body<'adminRunTableDdl'>) =>
    this.call('adminRunTableDdl', 'POST', `/admin/projects/${seg(projectId)}/tables/ddl`, body);
  /** Its body is optional in the contract (Body<> is never for such): typed here by hand. */
  copyPreviewSchema = (projectId: string, body: { dry_run?: boolean }) =>
    this.call('adminCopyPreviewSchema', 'POST', `/admin/projects/${seg(projectId)}/tables/copy-preview`, body as never);
  getTableQuota = (projectId: string) => this.call('adminGetTableQuota', 'GET', `/admin/projects/${seg(projectId)}/tables/quota`);
  setTableQuota = (projectId: string, body: Body<'adminSetTableQuota'>) =>
    this.call('adminSetTableQuota', 'PUT', `/admin/projects/${seg(projectId)}/tables/quota`, body);

  // Broadcasts (scripts/ops/broadcasts.ts).
  listBroadcasts = (query: Query<'adminListBroadcasts'>) => this.call('adminListBroadcasts', 'GET', `/admin/broadcasts${queryString(query)}`);
  getBroadcast = (id: string) => this.call('adminGetBroadcast', 'GET', `/admin/broadcasts/${seg(id)}`);
  approveBroadcast = (id: string, body: { scheduled_at?: string; approved_by?: string }) =>
    this.call('adminApproveBroadcast', 'POST', `/admin/broadcasts/${seg(id)}/approve`, body as never);
  cancelBroadcast = (id: string, body: { reason?: string }) => this.call('adminCancelBroadcast', 'POST', `/admin/broadcasts/${seg(id)}/cancel`, body as never);
  setBroadcastThroughput = (projectId: string, body: Body<'adminSetBroadcastThroughput'>) =>
    this.call('adminSetBroadcastThroughput', 'PUT', `/admin/projects/${seg(projectId)}/broadcast-throughput`, body);
  getRateCard = () => this.call('adminGetRateCard', 'GET', '/admin/rate-card');
  setRateCard = (body: Body<'adminSetRateCard'>) => this.call('adminSetRateCard', 'PUT', '/admin/rate-card', body);
  deleteRateCard = () => this.call('adminDeleteRateCard', 'DELETE', '/admin/rate-card');
  decideTemplate = (projectId: string, name: string, body: Body<'adminDecideTemplate'>) =>
    this.call('adminDecideTemplate', 'POST', `/admin/projects/${seg(projectId)}/templates/${seg(name)}/decision`, body);
  getContactImport = (id: string) => this.call('adminGetContactImport', 'GET', `/admin/contact-imports/${seg(id)}`);
  /** Streams a CSV file as the body (never read into memory). */
  async createContactImport(projectId: string, file: NodeJS.ReadableStream, query: Query<'adminCreateContactImport'>): Promise<{ import: { id: string; status: string } }> {
    const url = `${this.config.baseUrl}/admin/projects/${seg(projectId)}/contact-imports${queryString(query)}`;
    return (await this.streamBody('POST', url, { 'content-type': 'text/csv' }, file)).data;
  }
  listDeployments = (projectId: string) => this.call('adminListDeployments', 'GET', `/admin/projects/${seg(projectId)}/deployments`);
  rollbackDeployment = (projectId: string, deploymentId: string, body: { message?: string }) =>
    this.call('adminRollbackDeployment', 'POST', `/admin/projects/${seg(projectId)}/deployments/${seg(deploymentId)}/rollback`, body as never);
  listBotLogs = (projectId: string, query: Query<'adminListBotLogs'> = {}) =>
    this.call('adminListBotLogs', 'GET', `/admin/projects/${seg(projectId)}/bot/logs${queryString(query)}`);
  listSetAsideEvents = (projectId: string, query: Query<'adminListSetAsideEvents'> = {}) =>
    this.call('adminListSetAsideEvents', 'GET', `/admin/projects/${seg(projectId)}/bot/set-aside${queryString(query)}`);
  getBotCapacity = (projectId: string) => this.call('adminGetBotCapacity', 'GET', `/admin/projects/${seg(projectId)}/bot/capacity`);
  listSecrets = (projectId: string) => this.call('adminListSecrets', 'GET', `/admin/projects/${seg(projectId)}/secrets`);
  setSecret = (projectId: string, name: string, body: Body<'adminSetSecret'>) =>
    this.call('adminSetSecret', 'PUT', `/admin/projects/${seg(projectId)}/secrets/${seg(name)}`, body);
  deleteSecret = (projectId: string, name: string) => this.call('adminDeleteSecret', 'DELETE', `/admin/projects/${seg(projectId)}/secrets/${seg(name)}`);
  listSchedules = (projectId: string) => this.call('adminListSchedules', 'GET', `/admin/projects/${seg(projectId)}/bot/schedules`);
  pauseSchedule = (projectId: string, name: string) => this.call('adminPauseSchedule', 'POST', `/admin/projects/${seg(projectId)}/bot/schedules/${seg(name)}/pause`);
  resumeSchedule = (projectId: string, name: string) => this.call('adminResumeSchedule', 'POST', `/admin/projects/${seg(projectId)}/bot/schedules/${seg(name)}/resume`);
  runSchedule = (projectId: string, name: string) => this.call('adminRunSchedule', 'POST', `/admin/projects/${seg(projectId)}/bot/schedules/${seg(name)}/run`);
  listScheduleRuns = (projectId: string, name: string, query: Query<'adminListScheduleRuns'> = {}) =>
    this.call('adminListScheduleRuns', 'GET', `/admin/projects/${seg(projectId)}/bot/schedules/${seg(name)}/runs${queryString(query)}`);
  getHttpAllowlist = (projectId: string) => this.call('adminGetHttpAllowlist', 'GET', `/admin/projects/${seg(projectId)}/bot/http-allowlist`);
  setHttpAllowlist = (projectId: string, body: Body<'adminSetHttpAllowlist'>) =>
    this.call('adminSetHttpAllowlist', 'PUT', `/admin/projects/${seg(projectId)}/bot/http-allowlist`, body);
  listProjectFiles = (projectId: string) => this.call('adminListProjectFiles', 'GET', `/admin/projects/${seg(projectId)}/files`);
  deleteProjectFile = (projectId: string, name: string) => this.call('adminDeleteProjectFile', 'DELETE', `/admin/projects/${seg(projectId)}/files/${seg(name)}`);
  /** Streams a local file as the body (never read into memory); `created` tells a new file from a replacement. */
  async uploadProjectFile(projectId: string, name: string, file: NodeJS.ReadableStream, size: number): Promise<Data<'adminUploadProjectFile'> & { created: boolean }> {
    const url = `${this.config.baseUrl}/admin/projects/${seg(projectId)}/files/${seg(name)}`;
    const { data, status } = await this.streamBody('PUT', url, { 'content-type': 'application/octet-stream', 'content-length': String(size) }, file);
    return { ...data, created: status === 201 };
  }
  /** Sends `file` as the streamed body (never read into memory); answers the envelope's data and the HTTP status. */
  private async streamBody(method: string, url: string, headers: Record<string, string>, file: NodeJS.ReadableStream): Promise<{ data: any; status: number }> {
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${this.config.token}`, accept: 'application/json', ...headers },
        body: file as never,
        duplex: 'half',
      } as RequestInit);
    } catch (e) {
      throw this.transportFailure(e);
    }
    const json = parseJson(await res.text());
    if (json?.success === true) return { data: json.data, status: res.status };
    if (json?.success === false) throw new OpsFailure(json as FailureEnvelope, res.status);
    throw failure('bad_response', `${method} ${url} answered HTTP ${res.status} without the service's envelope`, res.status);
  }
  /** Streams a file's bytes into `out`; resolves with how many were written. */
  async downloadProjectFile(projectId: string, name: string, out: NodeJS.WritableStream): Promise<number> {
    const url = `${this.config.baseUrl}/admin/projects/${seg(projectId)}/files/${seg(name)}`;
    let res: Response;
    try {
      res = await fetch(url, { headers: { authorization: `Bearer ${this.config.token}` }, signal: AbortSignal.timeout(this.config.timeoutMs) });
    } catch (e) {
      throw this.transportFailure(e);
    }
    if (!res.ok || !res.body) {
      const json = parseJson(await res.text());
      if (json?.success === false) throw new OpsFailure(json as FailureEnvelope, res.status);
      throw failure('bad_response', `GET ${url} answered HTTP ${res.status} without the service's envelope`, res.status);
    }
    let bytes = 0;
    const { Readable, Transform } = await import('node:stream');
    const { pipeline } = await import('node:stream/promises');
    await pipeline(
      Readable.fromWeb(res.body as never),
      new Transform({ transform(chunk: Buffer, _e, cb) { bytes += chunk.length; cb(null, chunk); } }),
      out,
    );
    return bytes;
  }
  listFlows = (projectId: string) => this.call('adminListFlows', 'GET', `/admin/projects/${seg(projectId)}/flows`);
  /** Its body is optional in the contract: typed here by hand. */
  publishFlow = (projectId: string, name: string, body: { dry_run?: boolean }) =>
    this.call('adminPublishFlow', 'POST', `/admin/projects/${seg(projectId)}/flows/${seg(name)}/publish`, body as never);
  deprecateFlow = (projectId: string, name: string) =>
    this.call('adminDeprecateFlow', 'POST', `/admin/projects/${seg(projectId)}/flows/${seg(name)}/deprecate`);

  /** `op` names the operation for the types only; the method and path are what is sent. */
  private async call<Op extends OpName>(_op: Op, method: Method, path: string, body?: Body<Op>): Promise<Data<Op>> {
    const { baseUrl, token, timeoutMs } = this.config;
    const url = baseUrl + path;
    let status: number;
    let text: string;
    try {
      const res = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = res.status;
      text = await res.text();
    } catch (e) {
      throw this.transportFailure(e);
    }
    const json = parseJson(text);
    if (json?.success === true && 'data' in json) return json.data as Data<Op>;
    if (json?.success === false && typeof json.error?.code === 'string') throw new OpsFailure(json as FailureEnvelope, status);
    const snippet = text.replace(/\s+/g, ' ').trim().slice(0, 120);
    throw failure('bad_response', `${method} ${url} answered HTTP ${status} without the service's envelope${snippet ? `: ${snippet}` : ''}. Is --url / SERVICE_URL the messaging service?`, status);
  }

  private transportFailure(e: unknown): OpsFailure {
    const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    if (err.name === 'TimeoutError' || err.name === 'AbortError') {
      return failure('timeout', `no answer from ${this.config.baseUrl} within ${this.config.timeoutMs / 1000} s`);
    }
    const reason = err.cause?.code ?? err.cause?.message ?? err.message ?? String(e);
    return failure('unreachable', redact(`cannot reach ${this.config.baseUrl}: ${reason}`, this.config.token));
  }
}

/** `?a=1&b=x` from the parameters that are set, or '' when none is. */
function queryString(query: Record<string, string | number | boolean | undefined>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
  const qs = params.toString();
  return qs ? `?${qs}` : '';
}

function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A failure found on this side of the wire, in the same envelope shape as the server's. */
export function failure(code: string, message: string, status?: number): OpsFailure {
  return new OpsFailure({ success: false, error: { code, message } }, status);
}

export function redact(text: string, secret: string): string {
  return secret ? text.split(secret).join('***') : text;
}
