/**
 * What a restart must not lose: the simulator's numbers, templates, media, flows and users (their
 * usernames, business-scoped user ids and phones), kept in a folder
 * (the service's data folder for the bundled simulator, SIMULATOR_DATA_DIR standalone). A project
 * connected to a simulated number keeps working after either side restarts.
 *
 * Policy and why: a snapshot of numbers, templates and media records (JSON, written atomically,
 * only when it changed, at most once per `intervalMs` and at close), and each medium's bytes in a
 * file of its own written once. Statuses still owed are kept by simulator/owed-statuses.ts (Meta
 * retries them whatever happens to its machines); other callbacks in flight and the message log
 * are not kept.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Media, PhoneNumber, SimState, Template } from './state.js';
import { simFlows, type SimFlow } from './flows.js';
import type { SimUser } from './user-model.js';

interface Snapshot {
  version: 1;
  phones: PhoneNumber[];
  templates: Array<Omit<Template, 'timer'>>;
  media: Array<Omit<Media, 'data'> & { hasData: boolean }>;
  /** WhatsApp Flows with their Flow JSON (absent in snapshots from before flows). */
  flows?: SimFlow[];
  /**
   * WhatsApp users (absent in snapshots from before users): all of them up to MAX_KEPT_USERS, past
   * it those with a username (a customer known only by user id cannot be found again otherwise).
   */
  users?: SimUser[];
}

/** Users kept whole in the snapshot; past it only usernames (a load test's thousands of phones are not rewritten twice a second). */
export const MAX_KEPT_USERS = 10_000;

export interface SimPersistence {
  /** Writes the snapshot now if it changed. */
  flush(): void;
  close(): void;
}

export function persistState(state: SimState, dir: string, intervalMs = 500): SimPersistence {
  const mediaDir = path.join(dir, 'media');
  mkdirSync(mediaDir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, 'state.json');
  const written = new Set<string>(readdirSync(mediaDir));
  load(state, file, mediaDir);
  let last = '';

  const flush = () => {
    const snapshot: Snapshot = {
      version: 1,
      phones: [...state.phones.values()],
      templates: [...state.templates.values()].map(({ timer: _timer, ...t }) => t),
      media: [...state.media.values()].map(({ data, ...m }) => ({ ...m, hasData: data !== null })),
      flows: [...simFlows(state).values()],
      users: state.users.size <= MAX_KEPT_USERS ? state.users.all() : state.users.all().filter((u) => u.username !== null),
    };
    for (const m of state.media.values()) {
      if (m.data && !written.has(m.id)) {
        writeFileSync(path.join(mediaDir, m.id), m.data, { mode: 0o600 });
        written.add(m.id);
      }
    }
    const text = JSON.stringify(snapshot);
    if (text === last) return;
    writeFileSync(file + '.tmp', text, { mode: 0o600 });
    renameSync(file + '.tmp', file);
    last = text;
    // Bytes of media the simulator no longer holds are removed.
    for (const id of written) {
      const m = state.media.get(id);
      if (!m || !m.data) {
        rmSync(path.join(mediaDir, id), { force: true });
        written.delete(id);
      }
    }
  };
  const timer = setInterval(() => {
    try {
      flush();
    } catch {
      // a full or read-only disk must not stop the simulator; the next tick tries again
    }
  }, intervalMs);
  timer.unref();
  return {
    flush,
    close() {
      clearInterval(timer);
      try {
        flush();
      } catch {
        /* best effort at close */
      }
    },
  };
}

function load(state: SimState, file: string, mediaDir: string): void {
  if (!existsSync(file)) return;
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  for (const p of snapshot.phones ?? []) state.addPhone(p);
  for (const t of snapshot.templates ?? []) state.templates.set(t.id, { ...t, timer: null });
  for (const f of snapshot.flows ?? []) simFlows(state).set(f.id, f);
  for (const u of snapshot.users ?? []) state.users.add(u);
  for (const { hasData, ...m } of snapshot.media ?? []) {
    const bytes = hasData && existsSync(path.join(mediaDir, m.id)) ? readFileSync(path.join(mediaDir, m.id)) : null;
    state.addMedia({ ...m, data: bytes });
  }
}
