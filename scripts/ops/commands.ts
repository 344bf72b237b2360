/**
 * Every command of the operator CLI: one entry per operation of admin-openapi.yaml, each with its
 * usage and a run() that calls the API and returns the `data` (printed as is with --json) and the
 * text for people. Argument counts and accepted flags are checked by the dispatcher (main.ts) from
 * `args` and `flags`; run() only checks what is specific to it.
 */
import { flagSet, flagValue, parseChoice, parseDuration, parseInteger, parseList, UsageError, type ParsedArgs } from './args.js';
import type { AdminClient, Body, Schemas } from './client.js';
import * as f from './format.js';
import { TABLE_COMMANDS } from './tables.js';
import { BROADCAST_COMMANDS } from './broadcasts.js';
import { RATE_CARD_COMMANDS } from './rate-card.js';
import { CODE_COMMANDS } from './code.js';
import { SECRET_COMMANDS } from './secrets.js';
import { SCHEDULE_COMMANDS } from './schedules.js';
import { FILE_COMMANDS } from './files.js';
import { FLOW_COMMANDS } from './flows.js';
import { TEMPLATE_COMMANDS } from './templates.js';
import { scopeList, scopesHelp } from './scopes.js';
import type { Command, Group } from './command.js';

export type { Command, Group, Result } from './command.js';

export const GROUPS: Record<Group, string> = {
  projects: 'Projects, their state and daily send quota',
  keys: 'Project API keys (pk_live_…, pk_test_…)',
  connections: 'Agent connections and the projects they reach',
  tokens: 'Access tokens of agent connections (mcp_at_…)',
  channel: "A project's WhatsApp Cloud API number (secrets read from the environment)",
  runtime: "Runtime tokens (rt_…) the project's bot code uses to raise custom events",
  webhooks: 'Webhook registrations: recent deliveries, to diagnose a failing endpoint',
  tables: "A project's own tables: list, run DDL in public or preview, copy preview's structure to public, storage quotas",
  broadcasts: 'Campaigns: the approval queue, approve (now or later), cancel; the number throughput',
  contacts: 'Contact CSV imports with progress and a line report',
  code: "The bot's code: pull, push and deploy with a project key (SERVICE_API_KEY); deployments, rollback and logs; the hosts its http.fetch may reach",
  secrets: "The bot's secrets (secrets.get in the bot): set from the environment or stdin, listed by fingerprint, never shown",
  schedules: "The bot's scheduled tasks (export const schedules): list with next and last runs, pause, resume, run now, recent runs",
  files: "A project's stored files (files.get and files.sendAsMedia in the bot): upload, list, download, delete",
  flows: "A project's WhatsApp Flows: publish to the channel (an operator's decision), deprecate, list",
  templates: 'Message templates: approve or reject on the simulator (outside production; Meta decides real ones)',
  dashboard: 'People of the dashboard (/dashboard): the first owner of a project, with a one-time setup link',
};

/** Secrets come from the environment, never from arguments (shell history, process lists). */
function secretFromEnv(name: string): string {
  const v = process.env[name];
  if (!v) throw new UsageError(`channel set reads ${name} from the environment; it is not set`);
  return v;
}

const channelRecord = (c: Schemas['Channel']) =>
  f.record([
    ['project', c.project_id],
    ['phone number id', c.phone_number_id],
    ['business account id', c.waba_id],
    ['app id', c.app_id],
    ['display number', c.display_phone_number ?? '-'],
    ['webhook url', c.webhook_url],
    ['updated', f.when(c.updated_at)],
  ]);

/** Scope names are checked by the server, whose error lists the accepted ones. */

function required(args: ParsedArgs, name: string, cmd: string): string {
  const v = flagValue(args, name);
  if (v === undefined) throw new UsageError(`${cmd} needs --${name}`);
  return v;
}

const done = (title: string, body: string, extra = '') => `${title}\n\n${body}\n${extra}`.trimEnd();

type DeliveryStatus = Schemas['WebhookDeliveryLog']['status'];
/** Every state a delivery can be in (the record makes the compiler check the list against the contract). */
const DELIVERY_STATES = Object.keys({ pending: 1, succeeded: 1, failed: 1, canceled: 1 } satisfies Record<DeliveryStatus, 1>) as DeliveryStatus[];
/** The contract's bounds and default for deliveries per page. */
const DELIVERIES_LIMIT = { min: 1, max: 100, default: 20 };

const DASHBOARD_ROLES = ['owner', 'admin', 'member'] as const satisfies readonly Schemas['DashboardGrant']['role'][];

export const COMMANDS: Command[] = [
  {
    group: 'dashboard', name: 'grant', args: ['<projectId>', '<email>'], options: '[--role owner|admin|member] [--reset-password]', flags: ['role', 'reset-password'],
    summary: 'Give a person a dashboard role (default owner); prints the one-time setup link when they have no password yet (--reset-password: a lost password)',
    async run(api, [projectId, email], args) {
      const rawRole = flagValue(args, 'role');
      const role = rawRole === undefined ? 'owner' : parseChoice(rawRole, '--role', DASHBOARD_ROLES);
      const data = await api.grantDashboardRole(projectId, { email, role, reset_password: flagSet(args, 'reset-password') });
      const link = data.setup_url
        ? `Setup link (works once, until ${data.setup_expires_at}; send it to the person, it is not shown again):\n  ${data.setup_url}`
        : 'This person already has a password: they sign in at /dashboard/login.';
      return { data, human: done(`${data.account.email} is ${data.role} of project ${data.project_id}.`, link) };
    },
  },
  {
    group: 'projects', name: 'list', args: [], summary: 'List all projects, deleted ones included',
    async run(api) {
      const data = await api.listProjects();
      return { data, human: f.projectTable(data.projects) };
    },
  },
  {
    group: 'projects', name: 'create', args: ['<name>'], options: '[--id ID] [--quota N]', flags: ['id', 'quota'],
    summary: 'Create a project (id generated as prj_… unless --id is given)',
    async run(api, [name], args) {
      const id = flagValue(args, 'id');
      const quota = flagValue(args, 'quota');
      const data = await api.createProject({
        name,
        ...(id !== undefined ? { id } : {}),
        ...(quota !== undefined ? { daily_send_quota: parseInteger(quota, '--quota') } : {}),
      });
      return { data, human: done(`Created project ${data.project.id}.`, f.projectRecord(data.project)) };
    },
  },
  {
    group: 'projects', name: 'show', args: ['<id>'], summary: 'Show one project',
    async run(api, [id]) {
      const data = await api.getProject(id);
      return { data, human: f.projectRecord(data.project) };
    },
  },
  {
    group: 'projects', name: 'rename', args: ['<id>', '<name>'], summary: 'Rename a project',
    async run(api, [id, name]) {
      const data = await api.updateProject(id, { name });
      return { data, human: done(`Renamed project ${data.project.id}.`, f.projectRecord(data.project)) };
    },
  },
  {
    group: 'projects', name: 'pause', args: ['<id>'], summary: 'Pause a project (its keys get 403 project_inactive)',
    async run(api, [id]) {
      const data = await api.updateProject(id, { status: 'paused' });
      return { data, human: done(`Paused project ${data.project.id}: its keys are refused until it is resumed.`, f.projectRecord(data.project)) };
    },
  },
  {
    group: 'projects', name: 'resume', args: ['<id>'], summary: 'Resume a paused project',
    async run(api, [id]) {
      const data = await api.updateProject(id, { status: 'active' });
      return { data, human: done(`Resumed project ${data.project.id}.`, f.projectRecord(data.project)) };
    },
  },
  {
    group: 'projects', name: 'delete', args: ['<id>'], summary: 'Delete a project (records kept; it can no longer change)',
    async run(api, [id]) {
      const data = await api.deleteProject(id);
      return { data, human: done(`Deleted project ${data.project.id}: its keys no longer work.`, f.projectRecord(data.project)) };
    },
  },
  {
    group: 'projects', name: 'quota', args: ['<id>', '<n>'], options: '[--reserve N]', flags: ['reserve'],
    summary: 'Set the daily send quota (--reserve: the units campaigns leave for conversations)',
    async run(api, [id, n], args) {
      const reserve = flagValue(args, 'reserve');
      const data = await api.updateProject(id, {
        daily_send_quota: parseInteger(n, 'the quota'),
        ...(reserve !== undefined ? { conversation_reserve: parseInteger(reserve, '--reserve') } : {}),
      });
      const kept = data.project.conversation_reserve ? `, ${data.project.conversation_reserve} of it kept for conversations` : '';
      return { data, human: done(`Set the daily send quota of ${data.project.id} to ${data.project.daily_send_quota}${kept}.`, f.projectRecord(data.project)) };
    },
  },

  {
    group: 'keys', name: 'list', args: ['<projectId>'], summary: "List a project's keys (never their secrets)",
    async run(api, [projectId]) {
      const data = await api.listKeys(projectId);
      return { data, human: f.keyTable(data.keys) };
    },
  },
  {
    group: 'keys', name: 'create', args: ['<projectId>'], options: '--name NAME --scopes a,b [--test]', details: scopesHelp,
    flags: ['name', 'scopes', 'test'], summary: 'Mint a key; --test mints a pk_test_ key. The secret is shown once',
    async run(api, [projectId], args) {
      const name = required(args, 'name', 'keys create');
      const scopes = scopeList(required(args, 'scopes', 'keys create'), '--scopes');
      const data = await api.createKey(projectId, { name, scopes, mode: flagSet(args, 'test') ? 'test' : 'live' });
      const title = `Created ${data.key.mode} key ${data.key.id} for project ${data.key.project_id}.`;
      return { data, human: done(title, f.keyRecord(data.key), f.secretBlock(data.secret, 'SERVICE_API_KEY', api.baseUrl)) };
    },
  },
  {
    group: 'keys', name: 'show', args: ['<keyId>'], summary: 'Show one key',
    async run(api, [keyId]) {
      const data = await api.getKey(keyId);
      return { data, human: f.keyRecord(data.key) };
    },
  },
  {
    group: 'keys', name: 'scopes', args: ['<keyId>', '<a,b>'], details: scopesHelp, summary: "Replace a key's scopes (effective on its next request)",
    async run(api, [keyId, list]) {
      const data = await api.updateKey(keyId, { scopes: scopeList(list, 'the scopes') });
      return { data, human: done(`Updated the scopes of key ${data.key.id}.`, f.keyRecord(data.key)) };
    },
  },
  {
    group: 'keys', name: 'rename', args: ['<keyId>', '<name>'], summary: 'Rename a key',
    async run(api, [keyId, name]) {
      const data = await api.updateKey(keyId, { name });
      return { data, human: done(`Renamed key ${data.key.id}.`, f.keyRecord(data.key)) };
    },
  },
  {
    group: 'keys', name: 'rotate', args: ['<keyId>'], summary: 'Issue a new secret; the old one stops working at once',
    async run(api, [keyId]) {
      const data = await api.rotateKey(keyId);
      const title = `Rotated key ${data.key.id}: the previous secret no longer works.`;
      return { data, human: done(title, f.keyRecord(data.key), f.secretBlock(data.secret, 'SERVICE_API_KEY', api.baseUrl)) };
    },
  },
  {
    group: 'keys', name: 'revoke', args: ['<keyId>'], summary: 'Revoke a key (later use gives 401 invalid_api_key)',
    async run(api, [keyId]) {
      const data = await api.revokeKey(keyId);
      return { data, human: done(`Revoked key ${data.key.id}.`, f.keyRecord(data.key)) };
    },
  },

  {
    group: 'connections', name: 'list', args: [], summary: 'List agent connections with their projects',
    async run(api) {
      const data = await api.listConnections();
      return { data, human: f.connectionTable(data.connections) };
    },
  },
  {
    group: 'connections', name: 'create', args: ['<name>'], summary: 'Create an agent connection',
    async run(api, [name]) {
      const data = await api.createConnection({ name });
      return { data, human: done(`Created connection ${data.connection.id}.`, f.connectionRecord(data.connection)) };
    },
  },
  {
    group: 'connections', name: 'show', args: ['<id>'], summary: 'Show one connection and its projects',
    async run(api, [id]) {
      const data = await api.getConnection(id);
      return { data, human: f.connectionRecord(data.connection) };
    },
  },
  {
    group: 'connections', name: 'delete', args: ['<id>'], summary: 'Delete a connection and its tokens',
    async run(api, [id]) {
      const data = await api.deleteConnection(id);
      return { data, human: done(`Deleted connection ${data.connection.id} and its tokens.`, f.connectionRecord(data.connection)) };
    },
  },
  {
    group: 'connections', name: 'attach', args: ['<connectionId>', '<projectId>'], options: '--scopes a,b [--default]', details: scopesHelp,
    flags: ['scopes', 'default'], summary: 'Attach a project, or change its scopes; --default makes it the default',
    async run(api, [id, projectId], args) {
      const scopes = scopeList(required(args, 'scopes', 'connections attach'), '--scopes');
      const data = await api.attachProject(id, projectId, { scopes, ...(flagSet(args, 'default') ? { is_default: true } : {}) });
      return { data, human: done(`Attached ${projectId} to connection ${data.connection.id}.`, f.connectionRecord(data.connection)) };
    },
  },
  {
    group: 'connections', name: 'detach', args: ['<connectionId>', '<projectId>'], summary: 'Detach a project from a connection',
    async run(api, [id, projectId]) {
      const data = await api.detachProject(id, projectId);
      return { data, human: done(`Detached ${projectId} from connection ${data.connection.id}.`, f.connectionRecord(data.connection)) };
    },
  },

  {
    group: 'tokens', name: 'list', args: ['<connectionId>'], summary: "List a connection's tokens (never their secrets)",
    async run(api, [connectionId]) {
      const data = await api.listTokens(connectionId);
      return { data, human: f.tokenTable(data.tokens) };
    },
  },
  {
    group: 'tokens', name: 'issue', args: ['<connectionId>'], options: '[--expires-in SECONDS]', flags: ['expires-in'],
    summary: 'Issue an access token (30 days unless --expires-in: 3600, 12h, 90d…). The secret is shown once',
    async run(api, [connectionId], args) {
      const raw = flagValue(args, 'expires-in');
      // The generated type marks expires_in_seconds required because it has a default; the
      // contract lets it be omitted, and then the server's default (30 days) applies.
      const body = (raw === undefined ? {} : { expires_in_seconds: parseDuration(raw, '--expires-in') }) as Body<'adminIssueToken'>;
      const data = await api.issueToken(connectionId, body);
      const title = `Issued token ${data.token.id} for connection ${data.token.connection_id}, valid until ${f.when(data.token.expires_at)}.`;
      return { data, human: done(title, f.tokenRecord(data.token), f.secretBlock(data.secret, 'SERVICE_ACCESS_TOKEN', api.baseUrl)) };
    },
  },
  {
    group: 'tokens', name: 'revoke', args: ['<tokenId>'], summary: 'Revoke an access token (later use gives 401 invalid_token)',
    async run(api, [tokenId]) {
      const data = await api.revokeToken(tokenId);
      return { data, human: done(`Revoked token ${data.token.id}.`, f.tokenRecord(data.token)) };
    },
  },
  {
    group: 'channel', name: 'show', args: ['<projectId>'], summary: "Show a project's channel (never its secrets)",
    async run(api, [projectId]) {
      const data = await api.getChannel(projectId);
      return { data, human: channelRecord(data.channel) };
    },
  },
  {
    group: 'channel', name: 'set', args: ['<projectId>'],
    options: '--phone-number-id ID --waba-id ID --app-id ID [--display-phone N]',
    flags: ['phone-number-id', 'waba-id', 'app-id', 'display-phone'],
    summary: "Set a project's WhatsApp number; secrets from env CHANNEL_ACCESS_TOKEN, CHANNEL_APP_SECRET, CHANNEL_VERIFY_TOKEN",
    async run(api, [projectId], args) {
      const display = flagValue(args, 'display-phone');
      const data = await api.setChannel(projectId, {
        phone_number_id: required(args, 'phone-number-id', 'channel set'),
        waba_id: required(args, 'waba-id', 'channel set'),
        app_id: required(args, 'app-id', 'channel set'),
        access_token: secretFromEnv('CHANNEL_ACCESS_TOKEN'),
        app_secret: secretFromEnv('CHANNEL_APP_SECRET'),
        verify_token: secretFromEnv('CHANNEL_VERIFY_TOKEN'),
        ...(display !== undefined ? { display_phone_number: display } : {}),
      });
      return { data, human: done(`Channel of ${data.channel.project_id} set. Configure this callback URL at Meta:`, channelRecord(data.channel)) };
    },
  },

  {
    group: 'runtime', name: 'list', args: ['<projectId>'], summary: "List a project's runtime tokens (never their secrets)",
    async run(api, [projectId]) {
      const data = await api.listRuntimeTokens(projectId);
      return { data, human: f.runtimeTokenTable(data.tokens) };
    },
  },
  {
    group: 'runtime', name: 'create', args: ['<projectId>'],
    summary: "Mint a runtime token for the bot code's emit(). The secret is shown once",
    async run(api, [projectId]) {
      const data = await api.createRuntimeToken(projectId);
      const title = `Created runtime token ${data.token.id} for project ${data.token.project_id}.`;
      const secret = f.secretBlock(data.secret, 'SERVICE_RUNTIME_TOKEN', api.baseUrl, [
        `export SERVICE_RUNTIME_URL=${api.baseUrl}    # both read by emit() in bot-client/emit.ts`,
      ]);
      return { data, human: done(title, f.runtimeTokenRecord(data.token), secret) };
    },
  },
  {
    group: 'runtime', name: 'revoke', args: ['<tokenId>'], summary: 'Revoke a runtime token (later use gives 401 invalid_token)',
    async run(api, [tokenId]) {
      const data = await api.revokeRuntimeToken(tokenId);
      return { data, human: done(`Revoked runtime token ${data.token.id}.`, f.runtimeTokenRecord(data.token)) };
    },
  },

  {
    group: 'webhooks', name: 'deliveries', args: ['<webhookId>'], options: '[--status STATUS] [--limit N]', flags: ['status', 'limit'],
    summary: `Recent deliveries, newest first; --status ${DELIVERY_STATES.join('|')}, --limit ${DELIVERIES_LIMIT.min}-${DELIVERIES_LIMIT.max} (default ${DELIVERIES_LIMIT.default})`,
    async run(api, [webhookId], args) {
      const rawStatus = flagValue(args, 'status');
      const rawLimit = flagValue(args, 'limit');
      const status = rawStatus === undefined ? undefined : parseChoice(rawStatus, '--status', DELIVERY_STATES);
      const limit = rawLimit === undefined ? undefined : parseInteger(rawLimit, '--limit', DELIVERIES_LIMIT.min, DELIVERIES_LIMIT.max);
      const data = await api.listWebhookDeliveries(webhookId, { status, limit });
      const shown = limit ?? DELIVERIES_LIMIT.default;
      const empty = status ? `No ${status} deliveries for this registration.` : 'No deliveries for this registration yet.';
      const more = data.deliveries.length === shown && shown < DELIVERIES_LIMIT.max
        ? `Showing the latest ${shown}; --limit up to ${DELIVERIES_LIMIT.max} shows more.`
        : '';
      return { data, human: f.deliveriesView(data.webhook, data.deliveries, empty, more) };
    },
  },
  ...TABLE_COMMANDS,
  ...BROADCAST_COMMANDS,
  ...RATE_CARD_COMMANDS,
  ...CODE_COMMANDS,
  ...SECRET_COMMANDS,
  ...SCHEDULE_COMMANDS,
  ...FILE_COMMANDS,
  ...FLOW_COMMANDS,
  ...TEMPLATE_COMMANDS,
];

export function findCommand(group: string, name: string): Command | undefined {
  return COMMANDS.find((c) => c.group === group && c.name === name);
}

export const isGroup = (s: string | undefined): s is Group => s !== undefined && Object.hasOwn(GROUPS, s);
