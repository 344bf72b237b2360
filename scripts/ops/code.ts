/**
 * Operator CLI: the bot's code. `code pull` copies a project's tree to a folder, `code push` sends
 * the changed files back (each with If-Match on the ETag pulled, so a file changed meanwhile is
 * reported as a conflict, never overwritten), `code deploy` builds and promotes; these three use a
 * project API key (SERVICE_API_KEY, scopes code:read / code:write), like a developer's editor.
 * `code deployments`, `code rollback` and `code logs` use the operator token.
 *
 * The folder keeps `.service-sync.json` (path → ETag at the last pull or push); it is never pushed.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { flagSet, flagValue, parseChoice, parseInteger, UsageError, type ParsedArgs } from './args.js';
import { failure, OpsFailure, redact, type AdminClient, type FailureEnvelope } from './client.js';
import type { Command } from './command.js';
import * as f from './format.js';

export const SYNC_FILE = '.service-sync.json';
const SKIP_DIRS = new Set(['node_modules', '.git']);

interface ApiFile {
  path: string;
  etag: string;
  protected: boolean;
  protected_reason: string | null;
  content?: string;
}

/** The public API with the project key: envelope in, data out, failures as OpsFailure. */
class CodeApi {
  constructor(private readonly baseUrl: string, private readonly key: string, private readonly timeoutMs: number) {}

  async call(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; data: any }> {
    let res: Response;
    let text: string;
    try {
      res = await fetch(this.baseUrl + url, {
        method,
        headers: { authorization: `Bearer ${this.key}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      text = await res.text();
    } catch (e) {
      throw failure('unreachable', redact(`cannot reach ${this.baseUrl}: ${(e as Error).message}`, this.key));
    }
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      throw failure('bad_response', `${method} ${url} answered HTTP ${res.status} without the service's envelope`, res.status);
    }
    if (json?.success === true) return { status: res.status, data: json.data };
    if (json?.success === false) throw new OpsFailure(json as FailureEnvelope, res.status);
    throw failure('bad_response', `${method} ${url} answered HTTP ${res.status} without the service's envelope`, res.status);
  }
}

function codeApi(api: AdminClient, args: ParsedArgs): CodeApi {
  const key = (process.env.SERVICE_API_KEY ?? '').trim();
  if (!key) throw new UsageError('SERVICE_API_KEY is not set: export a project API key with code:read and code:write (npm run ops -- keys create …)', 'api_key_missing', false);
  const timeout = flagValue(args, 'timeout');
  return new CodeApi(api.baseUrl, key, (timeout === undefined ? 60 : parseInteger(timeout, '--timeout', 1)) * 1000);
}

const filePath = (p: string) => '/v1/files/' + p.split('/').map(encodeURIComponent).join('/');
const etagOf = (text: string) => `"${createHash('sha256').update(text, 'utf8').digest('hex')}"`;

function readSync(dir: string): Record<string, string> {
  try {
    return JSON.parse(readFileSync(path.join(dir, SYNC_FILE), 'utf8')).files ?? {};
  } catch {
    return {};
  }
}

function writeSync(dir: string, files: Record<string, string>): void {
  const sorted = Object.fromEntries(Object.entries(files).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(path.join(dir, SYNC_FILE), JSON.stringify({ note: 'ETags of the last pull or push (npm run ops -- code …); not pushed.', files: sorted }, null, 2) + '\n');
}

function localFiles(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) out.push(...localFiles(dir, rel));
    } else if (e.isFile() && rel !== SYNC_FILE) out.push(rel);
  }
  return out.sort();
}

function diagnosticsOf(env: FailureEnvelope): Array<{ file: string; line: number; column: number; message: string; source?: string }> {
  return (env.error.details as { diagnostics?: Array<{ file: string; line: number; column: number; message: string; source?: string }> } | undefined)?.diagnostics ?? [];
}

function diagnosticsText(env: FailureEnvelope): string {
  return diagnosticsOf(env).map((d) => `${d.file}:${d.line}:${d.column}  ${d.message}`).join('\n');
}

const deploymentRow = (d: any) => [d.id, d.status, d.active ? 'active' : '', f.when(d.created_at), d.created_by ?? '-', d.rollback_of ?? '', d.message ?? ''];
const DEPLOYMENT_HEADERS = ['ID', 'STATUS', '', 'CREATED', 'BY', 'ROLLBACK OF', 'MESSAGE'];

export const CODE_COMMANDS: Command[] = [
  {
    group: 'code', name: 'pull', args: ['<dir>'], options: '[--tree development|production]', flags: ['tree'], auth: 'api_key',
    summary: "Copy the project's code tree (SERVICE_API_KEY's project) into a folder",
    async run(api, [dir], args) {
      const client = codeApi(api, args);
      const tree = parseChoice(flagValue(args, 'tree') ?? 'development', '--tree', ['development', 'production'] as const);
      const list = (await client.call('GET', `/v1/files?tree=${tree}`)).data;
      const etags: Record<string, string> = {};
      for (const file of list.files as ApiFile[]) {
        const full = (await client.call('GET', `${filePath(file.path)}?tree=${tree}`)).data.file as ApiFile;
        const target = path.join(dir, ...full.path.split('/'));
        mkdirSync(path.dirname(target), { recursive: true });
        writeFileSync(target, full.content ?? '');
        etags[full.path] = full.etag;
      }
      mkdirSync(dir, { recursive: true });
      writeSync(dir, etags);
      const protectedCount = (list.files as ApiFile[]).filter((x) => x.protected).length;
      return { data: { tree, dir, files: Object.keys(etags) }, human: `Pulled ${Object.keys(etags).length} files of the ${tree} tree into ${dir} (${protectedCount} platform-managed: read-only, push skips them).` };
    },
  },
  {
    group: 'code', name: 'push', args: ['<dir>'], auth: 'api_key',
    summary: 'Send the files changed in a folder to the development tree (If-Match on the pulled ETags; conflicts are reported, not overwritten)',
    async run(api, [dir], args) {
      const client = codeApi(api, args);
      if (!existsSync(dir)) throw new UsageError(`no folder ${dir}`, 'usage_error', false);
      const remote = new Map<string, ApiFile>(((await client.call('GET', '/v1/files')).data.files as ApiFile[]).map((x) => [x.path, x]));
      const sync = readSync(dir);
      const pushed: string[] = [];
      const conflicts: string[] = [];
      const refused: string[] = [];
      for (const rel of localFiles(dir)) {
        const content = readFileSync(path.join(dir, ...rel.split('/')), 'utf8');
        const server = remote.get(rel);
        if (server?.protected) continue;
        if (server && server.etag === etagOf(content)) {
          sync[rel] = server.etag;
          continue;
        }
        const headers: Record<string, string> = sync[rel] ? { 'If-Match': sync[rel] } : { 'If-None-Match': '*' };
        try {
          const res = await client.call('PUT', filePath(rel), { content }, headers);
          sync[rel] = res.data.file.etag;
          pushed.push(rel);
        } catch (e) {
          if (!(e instanceof OpsFailure)) throw e;
          if (e.envelope.error.code === 'precondition_failed') conflicts.push(rel);
          else refused.push(`${rel}: ${e.envelope.error.code} ${e.envelope.error.message}`);
        }
      }
      writeSync(dir, sync);
      const lines = [`Pushed ${pushed.length} file(s)${pushed.length ? ': ' + pushed.join(', ') : ''}.`];
      if (conflicts.length) lines.push(`Changed on the server since your pull (not overwritten; pull again and reapply): ${conflicts.join(', ')}`);
      if (refused.length) lines.push('Refused:', ...refused.map((r) => `  ${r}`));
      if (conflicts.length || refused.length) {
        throw new OpsFailure({ success: false, error: { code: conflicts.length ? 'precondition_failed' : 'push_failed', message: lines.join('\n'), details: { pushed, conflicts, refused } } });
      }
      return { data: { pushed, conflicts, refused }, human: lines.join('\n') };
    },
  },
  {
    group: 'code', name: 'deploy', args: [], options: '[--message TEXT] [--sample TEXT] [--force]', flags: ['message', 'sample', 'force'], auth: 'api_key',
    summary: 'Build the development tree, run it once on a sample message (--sample, default "Hello"; --force skips it) and promote it to production (prints diagnostics on a failed build or sample)',
    async run(api, _pos, args) {
      const client = codeApi(api, args);
      const message = flagValue(args, 'message');
      const sample = flagValue(args, 'sample');
      try {
        const res = await client.call('POST', '/v1/deployments', {
          ...(message === undefined ? {} : { message }),
          ...(sample === undefined ? {} : { sample: { text: sample } }),
          ...(flagSet(args, 'force') ? { force: true } : {}),
        });
        const d = res.data.deployment;
        return { data: res.data, human: res.data.no_op ? `Nothing to deploy: production already runs this code (${d.id}).` : `Deployed ${d.id} (${d.content_hash.slice(0, 12)}); production runs it from the next message.` };
      } catch (e) {
        if (e instanceof OpsFailure && e.envelope.error.code === 'build_failed') {
          // --force skips only the sample run: said only when the sample is what failed.
          const sampleFailed = diagnosticsOf(e.envelope).some((d) => d.source === 'sample');
          const hint = sampleFailed ? '--force skips the sample run' : 'fix what is listed and deploy again; --force would not help: it skips only the sample run';
          throw new OpsFailure({ ...e.envelope, error: { ...e.envelope.error, message: `build failed; production is unchanged (${hint}).\n${diagnosticsText(e.envelope)}` } }, e.status);
        }
        throw e;
      }
    },
  },
  {
    group: 'code', name: 'deployments', args: ['<projectId>'],
    summary: "List a project's last 20 deployments",
    async run(api, [projectId]) {
      const data = await api.listDeployments(projectId);
      return { data, human: f.table(DEPLOYMENT_HEADERS, data.deployments.map(deploymentRow), 'No deployments yet.') };
    },
  },
  {
    group: 'code', name: 'rollback', args: ['<projectId>', '<deploymentId>'], options: '[--message TEXT]', flags: ['message'],
    summary: 'Promote an earlier deployment to production again (no rebuild)',
    async run(api, [projectId, deploymentId], args) {
      const message = flagValue(args, 'message');
      const data = await api.rollbackDeployment(projectId, deploymentId, message === undefined ? {} : { message });
      return { data, human: data.no_op ? `${deploymentId} is already active.` : `Rolled back: ${data.deployment.id} restores ${deploymentId}.` };
    },
  },
  {
    group: 'code', name: 'logs', args: ['<projectId>'], options: '[--limit N] [--level debug|info|warn|error]', flags: ['limit', 'level'],
    summary: "Read the bot's log (its own lines, and stopped invocations)",
    async run(api, [projectId], args) {
      const limit = flagValue(args, 'limit');
      const level = flagValue(args, 'level');
      const data = await api.listBotLogs(projectId, {
        ...(limit === undefined ? {} : { limit: parseInteger(limit, '--limit', 1, 200) }),
        ...(level === undefined ? {} : { level: parseChoice(level, '--level', ['debug', 'info', 'warn', 'error'] as const) }),
      });
      return { data, human: f.table(['WHEN', 'LEVEL', 'KIND', 'MESSAGE'], data.logs.map((l) => [f.when(l.created_at), l.level, l.kind, l.message]), 'No log entries.') };
    },
  },
  {
    group: 'code', name: 'set-aside', args: ['<projectId>'], options: '[--limit N]', flags: ['limit'],
    summary: 'List the events set aside after abnormal bot runs (never replayed)',
    async run(api, [projectId], args) {
      const limit = flagValue(args, 'limit');
      const data = await api.listSetAsideEvents(projectId, limit === undefined ? {} : { limit: parseInteger(limit, '--limit', 1, 200) });
      return { data, human: f.table(['SET ASIDE', 'MESSAGE', 'RUNS', 'REASON'], data.events.map((e) => [f.when(e.set_aside_at), e.message_id, String(e.abnormal_runs), e.reason]), 'No set-aside events.') };
    },
  },
  {
    group: 'code', name: 'capacity', args: ['<projectId>'],
    summary: "Show the bot's CPU this minute and where its isolates run (shared, or a process of their own)",
    async run(api, [projectId]) {
      const data = await api.getBotCapacity(projectId);
      const { cpu, sandbox, events } = data;
      const where = sandbox.process === 'shared' ? 'a shared sandbox process' : `a process of its own (${sandbox.reason}) until ${sandbox.until}`;
      const human = [
        `CPU this minute: ${cpu.spent_ms} ms of ${cpu.budget_ms} ms (burst ${cpu.burst_ms} ms): ${cpu.state.replace('_', ' ')}${cpu.resets_at ? `, resets ${cpu.resets_at}` : ''}`,
        `Isolates: in ${where}${sandbox.pid ? `, pid ${sandbox.pid}, ${sandbox.rss_mb} MB` : ''}`,
        `Events here: ${events.running} running, ${events.queued} held`,
      ].join('\n');
      return { data, human };
    },
  },
];
