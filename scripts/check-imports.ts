/**
 * The house rules of imports, checked in CI (`npm run check:imports`):
 * - the domain (lib/) imports neither Express, nor the HTTP edge (http/, middleware/, handlers/);
 * - lib/platform/ is the floor: it imports no capability of lib/;
 * - lib/ imports no file of channel/: the domain owns the channel port (lib/channel-port/) and
 *   takes its adapter through Deps.channel;
 * - channel/ (the Cloud API client and Meta's payloads, the port's adapter) is a leaf over
 *   lib/platform/ and the port (lib/channel-port/);
 * - a capability of lib/ imports another only along an edge declared in CAPABILITY_EDGES below,
 *   which run one way (a new room, or a new edge, is declared there: the README's house shows them);
 *   lib/platform/ is below them all, and lib/deps.ts, the composition's type, may be named by any;
 * - the HTTP edge (http/, middleware/, handlers/) reaches the database only through the domain: it
 *   imports neither pg, Prisma, nor lib/platform/db/ (its error classification aside), and runs no
 *   `.query(` or `.prisma.` of its own (the lib/ module that owns a table reads and writes it);
 * - no file imports itself through a circle (type-only imports count: they tie the modules too).
 * Exits 1 with one line per violation.
 */
import fs from 'node:fs';
import path from 'node:path';
import { sourceFiles } from './source-files.js';

const ROOTS = ['app.ts', 'server.ts', 'services.ts', 'lib', 'http', 'middleware', 'handlers', 'jobs', 'channel', 'bot-client', 'simulator', 'scripts'];

/**
 * Which capability may import which (besides lib/platform/ and lib/deps.ts). One way only: a
 * capability that needs something of a room that depends on it moves that part down, or takes
 * it through an interface of Deps (as messaging hands inbound messages to the bot's BotHook).
 */
export const CAPABILITY_EDGES: Record<string, string[]> = {
  access: [],
  // The dashboard's people: accounts, sessions, roles, invites, the sign-in throttle, the audit trail.
  accounts: ['access'],
  code: [],
  conversations: ['channel-port'],
  tables: [],
  sandbox: [],
  // The channel port: what the domain asks of a channel and what a channel tells it (its adapters are in channel/).
  'channel-port': [],
  'channel-settings': ['access', 'channel-port'],
  webhooks: ['access'],
  templates: ['access', 'channel-port', 'channel-settings', 'webhooks'],
  media: ['access', 'channel-port', 'channel-settings'],
  // A project's stored files: their audit rows (accounts), and media made of them.
  'project-files': ['access', 'accounts', 'media'],
  flows: ['channel-port', 'channel-settings', 'code'],
  consent: ['access', 'channel-port', 'conversations'],
  pricing: ['channel-port', 'channel-settings', 'conversations'],
  'contacts-import': ['conversations', 'tables'],
  deploy: ['code', 'sandbox'],
  upkeep: ['channel-settings', 'webhooks'],
  // Voice calls: their signalling, events and the contacts' call permission (docs/calls.md).
  calls: ['channel-port', 'channel-settings', 'conversations', 'webhooks'],
  // WhatsApp groups: the groups tables, their events, the business's group operations (docs/groups.md).
  groups: ['channel-port', 'channel-settings', 'conversations', 'webhooks'],
  // inbox: a customer's message in an unassigned conversation is auto-assigned (lib/inbox/auto-assign.ts).
  messaging: ['access', 'calls', 'channel-port', 'groups', 'channel-settings', 'consent', 'conversations', 'flows', 'inbox', 'media', 'pricing', 'templates', 'webhooks'],
  broadcasts: ['access', 'channel-port', 'channel-settings', 'conversations', 'messaging', 'pricing'],
  // Calls: a bot acts on a call through the API's one path (lib/bot/ops-calls.ts); calls reach the bot through BotHook.
  // inbox: a bot's failed http.fetch is noted on the event's conversation (lib/bot/http-fetch.ts).
  bot: ['access', 'accounts', 'calls', 'channel-port', 'channel-settings', 'code', 'consent', 'conversations', 'deploy', 'inbox', 'messaging', 'project-files', 'sandbox', 'tables', 'webhooks'],
  // The team's inbox: assignment, labels, notes and canned replies, each change with its event.
  inbox: ['access', 'conversations', 'webhooks'],
  // The console's customers pages read conversations and send a person's reply through messaging's one send path;
  // its group actions are the API's own group operations.
  dashboard: ['access', 'accounts', 'broadcasts', 'calls', 'conversations', 'groups', 'inbox', 'messaging', 'templates', 'webhooks'],
  // The agents' authorization server: connections and tokens (access), consent's roles and audit (accounts).
  oauth: ['access', 'accounts'],
  // The MCP server's identity as a protected resource (its tools and endpoint are HTTP edge: http/mcp/).
  mcp: [],
};

/** The capability a file of lib/ belongs to (`lib/<room>/…`); null for lib/platform and lib/deps.ts. */
function capabilityOf(file: string): string | null {
  const m = /^lib\/([^/]+)\//.exec(file);
  return m && m[1] !== 'platform' ? m[1] : null;
}
const SPEC = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])([^'"]+)\1/g;

export interface Violation {
  file: string;
  message: string;
}

/** The imports of each file: relative ones resolved to repository paths, packages by name. */
export function importsOf(root: string, files: string[]): Map<string, { local: string[]; packages: string[] }> {
  const graph = new Map<string, { local: string[]; packages: string[] }>();
  for (const file of files) {
    const text = fs.readFileSync(path.join(root, file), 'utf8').replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, '');
    const local: string[] = [];
    const packages: string[] = [];
    for (const m of text.matchAll(SPEC)) {
      const spec = m[2];
      if (spec.startsWith('.')) {
        const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.js$/, '.ts');
        local.push(resolved);
      } else packages.push(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
    }
    graph.set(file, { local, packages });
  }
  return graph;
}

const under = (file: string, folder: string) => file.startsWith(folder + '/');
const EDGE = ['http', 'middleware', 'handlers'];
/** What the edge may import of the database layer: the classification of its errors into answers. */
const EDGE_DB_ALLOWED = new Set(['lib/platform/db/errors.ts']);

/** Database access written in an edge file itself (its text without comments). */
export function edgeDatabaseCalls(file: string, text: string): Violation[] {
  if (!EDGE.some((f) => under(file, f))) return [];
  const code = text.replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, '');
  const found = /\.query\s*[<(]|\.prisma\./.exec(code);
  return found ? [{ file, message: `the HTTP edge queries the database itself (${found[0].trim()}…): read and write through the lib/ module that owns the table` }] : [];
}

export function checkRules(graph: Map<string, { local: string[]; packages: string[] }>): Violation[] {
  const violations: Violation[] = [];
  for (const [file, { local, packages }] of graph) {
    if (under(file, 'lib')) {
      if (packages.includes('express') || packages.includes('express-openapi-validator')) {
        violations.push({ file, message: 'the domain imports Express: take plain values, let http/ or a handler speak HTTP' });
      }
      for (const to of local) {
        const edge = ['http', 'middleware', 'handlers'].find((f) => under(to, f));
        if (edge) violations.push({ file, message: `the domain imports the HTTP edge (${to})` });
        if (under(to, 'channel')) violations.push({ file, message: `the domain imports the channel's adapter (${to}): use the port (lib/channel-port/) and Deps.channel` });
      }
    }
    if (EDGE.some((f) => under(file, f))) {
      for (const p of packages) {
        if (p === 'pg' || p === '@prisma/client' || p.startsWith('@prisma/adapter')) violations.push({ file, message: `the HTTP edge imports the database driver (${p}): go through the domain` });
      }
      for (const to of local) {
        if ((under(to, 'lib/platform/db') && !EDGE_DB_ALLOWED.has(to)) || under(to, 'generated/prisma')) {
          violations.push({ file, message: `the HTTP edge imports the database layer (${to}): go through the domain` });
        }
      }
    }
    const from = capabilityOf(file);
    if (from !== null) {
      const allowed = CAPABILITY_EDGES[from];
      if (!allowed) violations.push({ file, message: `lib/${from}/ is not declared in CAPABILITY_EDGES (scripts/check-imports.ts): declare the room and what it may import` });
      for (const to of local) {
        const target = capabilityOf(to);
        if (target === null || target === from || !allowed) continue;
        if (!allowed.includes(target)) {
          const back = CAPABILITY_EDGES[target]?.includes(from) ? ` (lib/${target}/ imports lib/${from}/: the edge would run both ways)` : '';
          violations.push({ file, message: `lib/${from}/ may not import lib/${target}/ (${to})${back}: declare the edge in CAPABILITY_EDGES, or move the shared part down` });
        }
      }
    }
    if (under(file, 'lib/platform')) {
      for (const to of local) {
        if (under(to, 'lib') && !under(to, 'lib/platform')) {
          violations.push({ file, message: `lib/platform imports a capability (${to}): the floor depends on nothing above it` });
        }
      }
    }
    if (under(file, 'channel')) {
      for (const to of local) {
        if (!under(to, 'channel') && !under(to, 'lib/platform') && !under(to, 'lib/channel-port')) {
          violations.push({ file, message: `channel/ is a leaf over lib/platform and the port (lib/channel-port) but imports ${to}` });
        }
      }
    }
  }
  return violations.concat(cyclesOf(graph));
}

/** Every circle once, reported by its smallest member (Tarjan's strongly connected components). */
export function cyclesOf(graph: Map<string, { local: string[] }>): Violation[] {
  let index = 0;
  const stack: string[] = [];
  const onStack = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const found: Violation[] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.local ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const members: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        members.push(w);
      } while (w !== v);
      if (members.length > 1) {
        members.sort();
        found.push({ file: members[0], message: `imports run in a circle: ${members.join(' ↔ ')}` });
      }
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return found;
}

export function checkImports(root: string): Violation[] {
  const files = sourceFiles(root, ROOTS);
  // The declared edges run one way: no two rooms reach each other, directly or around a circle.
  const declared = new Map(Object.entries(CAPABILITY_EDGES).map(([room, to]) => [room, { local: to }]));
  const circles = cyclesOf(declared).map((v) => ({ file: 'scripts/check-imports.ts', message: `CAPABILITY_EDGES ${v.message}` }));
  const edgeCalls = files.flatMap((f) => edgeDatabaseCalls(f, fs.readFileSync(path.join(root, f), 'utf8')));
  return checkRules(importsOf(root, files)).concat(circles, edgeCalls);
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const violations = checkImports(process.cwd());
  for (const v of violations) console.error(`${v.file}: ${v.message}`);
  if (violations.length) {
    console.error(`${violations.length} import rule violation(s); see scripts/check-imports.ts for the rules.`);
    process.exit(1);
  }
  console.log('imports follow the house rules');
}
