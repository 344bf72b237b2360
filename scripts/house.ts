/**
 * The domain floor of the README's house, drawn from the rules it shows: each room of lib/ with
 * what it holds (ROOM_SUMMARIES) and what it may import (CAPABILITY_EDGES, scripts/check-imports.ts).
 * `npm run generate` writes it into README.md; `npm run generate:check` and tests/house/readme-house.test.ts
 * fail when the README differs, so the house cannot drift from the rules or the tree.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CAPABILITY_EDGES } from './check-imports.js';

/** What each room of lib/ holds, in a line or two (the README's words). */
export const ROOM_SUMMARIES: Record<string, string> = {
  dashboard: "the console's reads and actions, its one-time forms",
  bot: 'the bot runtime: inbox, helpers, the effects journal, rates, the CPU budget, preview',
  broadcasts: 'campaigns: create, pre-flight (quota, cost, limit), approval, the engine (claims, pacing, waves, retargets)',
  calls: 'voice calls: the calls table (store.ts), call events, the business\'s call actions, call permission',
  groups: 'WhatsApp groups: the groups tables (store.ts), group events, the business\'s group operations',
  messaging: 'the send ledger (ledger.ts: the only writer of messages and send_counters), sendMessage, inbound, status rank',
  inbox: "the team's inbox: assignment, labels, private notes, canned replies",
  'project-files': "a project's stored files (the bot's files.get, media made of them)",
  oauth: "the agents' authorization server: clients, consent, grants, tokens",
  consent: 'customer signals: keywords, user_preferences, 131050',
  pricing: "status pricing, rate card, estimate, messaging limit, the portfolio's reach budget",
  'contacts-import': 'CSV imports',
  deploy: 'builds, releases',
  flows: 'WhatsApp Flows: definitions, checks, publishing',
  media: 'media assets and uploads',
  templates: "mirrored templates and the channel's decisions",
  upkeep: 'start-up re-sealing of secrets',
  webhooks: 'events outbox, custom events, the delivery engine',
  'channel-settings': "a project's number, token and throughput",
  'channel-port': 'what the domain asks of a channel (sends, templates, media, flows) and the events a channel tells it; adapters in channel/',
  conversations: 'contacts (contact-store.ts writes them; identity by phone or BSUID, consent columns), conversations, views, the 24-hour window',
  access: 'projects, API keys, credentials, the scope catalogue',
  accounts: "the dashboard's people: accounts, passwords, sessions, CSRF, invites, roles, the sign-in throttle, the audit trail",
  code: "a project's code tree and its history",
  tables: "a project's own tables: DDL, rows, quotas, roles",
  sandbox: 'isolates, many projects per supervised process',
  mcp: "the MCP server's identity as a protected resource",
};

/** Inner width of the house's box (between its two │). */
const WIDTH = 90;
const NAME = 18;

/** Rooms that depend on more first (the longest chain of imports below them), then by name. */
function ordered(): string[] {
  const depth = new Map<string, number>();
  const of = (room: string, seen: Set<string> = new Set()): number => {
    if (depth.has(room)) return depth.get(room)!;
    if (seen.has(room)) return 0;
    seen.add(room);
    const d = Math.max(0, ...(CAPABILITY_EDGES[room] ?? []).map((r) => of(r, seen) + 1));
    depth.set(room, d);
    return d;
  };
  return Object.keys(CAPABILITY_EDGES).sort((a, b) => of(b) - of(a) || a.localeCompare(b));
}

function wrap(words: string[], first: number, rest: number): string[] {
  const lines: string[] = [];
  let line = '';
  let room = first;
  for (const w of words) {
    if (line && line.length + 1 + w.length > room) {
      lines.push(line);
      line = w;
      room = rest;
    } else {
      line = line ? `${line} ${w}` : w;
    }
  }
  if (line) lines.push(line);
  return lines;
}

/** The problems that keep the house from being drawn (a room without a summary, a summary without a room). */
export function houseProblems(root: string): string[] {
  const rooms = fs.readdirSync(path.join(root, 'lib'), { withFileTypes: true }).filter((d) => d.isDirectory() && d.name !== 'platform').map((d) => d.name);
  const problems: string[] = [];
  for (const r of rooms) if (!ROOM_SUMMARIES[r]) problems.push(`lib/${r}/ has no summary in ROOM_SUMMARIES (scripts/house.ts)`);
  for (const r of Object.keys(ROOM_SUMMARIES)) if (!rooms.includes(r)) problems.push(`ROOM_SUMMARIES names lib/${r}/, which does not exist`);
  return problems;
}

/** The domain floor's lines, box sides included. */
export function domainLines(): string[] {
  const out: string[] = [];
  for (const room of ordered()) {
    const edges = CAPABILITY_EDGES[room];
    // The arrow stays with the first room it points at (a non-breaking space while wrapping).
    const words = [...(ROOM_SUMMARIES[room] ?? '(no summary)').split(' '), ...(edges.length ? [`→\u00a0${edges[0]}`, ...edges.slice(1)] : ['(imports', 'no', 'room)'])];
    const lead = `   ${`${room}/`.padEnd(NAME)}`;
    const body = wrap(words, WIDTH - lead.length - 1, WIDTH - lead.length - 1).map((l) => l.replace(/\u00a0/g, ' '));
    body.forEach((l, i) => out.push(` │${(i === 0 ? lead : ' '.repeat(lead.length)) + l}`.padEnd(WIDTH + 2) + '│'));
  }
  return out;
}

/** README.md with its domain floor redrawn: the lines between the `lib/<capability>/` header and the next floor. */
export function redrawn(readme: string): string {
  const lines = readme.split('\n');
  const start = lines.findIndex((l) => l.includes('│ lib/<capability>/'));
  if (start < 0) throw new Error('README.md: the house has no `lib/<capability>/` floor');
  const end = lines.findIndex((l, i) => i > start && l.trimStart().startsWith('├'));
  if (end < 0) throw new Error('README.md: the domain floor has no end (a ├ line)');
  return [...lines.slice(0, start + 1), ...domainLines(), ...lines.slice(end)].join('\n');
}
