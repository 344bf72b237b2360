/**
 * The bot's inbox of events: each thing the deployed bot has to handle — an inbound message, a run
 * of one of its schedules, later others — written in the transaction that makes it (the stored
 * message, the fired run, the call's change) and deleted once the bot has handled it
 * (lib/bot/runtime.ts). An event is named by its key (`message:<message id>`, `schedule:<run id>`,
 * `call:<call id>:<status>`) and has a kind; its payload is the row it names, read when the event
 * is handed over again (a call's event keeps the call as it was at its change: the row moves on).
 *
 * Policy and why (one lease mechanism for every kind, the one the webhook deliveries and the
 * campaigns use: a row leased by a conditional UPDATE, renewed while held, retaken by a recurring
 * sweep on the job runner once its lease runs out):
 * - A row is leased to the instance that made the event (BOT_INBOX_LEASE_MS, renewed while the
 *   event waits or runs there). A row whose lease ran out belongs to a process that died
 *   (restart, kill -9) or could not delete it (a database outage): any instance's reclaim pass
 *   takes it (FOR UPDATE SKIP LOCKED, so two passes never take one row) and hands it to its bot.
 * - An event cut off after the bot's reply was sent and before the row was deleted is handled
 *   again; its sends carry the same references as the first time (lib/bot/runtime.ts, sendRef), so
 *   a reply that had gone out is not sent twice, and one whose outcome the crash left unknown
 *   (pending) is not sent again (at most once, as every send). Other effects (state, tables,
 *   events) repeat.
 * - Poison events are set aside: each run of the bot on an event is recorded as started
 *   (`run_started_at`) before it begins. A run that ends abnormally (its sandbox process crashed,
 *   a time or memory limit; lib/bot/runtime.ts) counts one, and so does a run a reclaim finds
 *   started by a process that died. At BOT_MAX_ABNORMAL_RUNS the event is set aside: it stays in
 *   this table with its reason for the operator, is logged to the bot log, and is never handed to
 *   the bot again (a restart included). Below it, the event goes back to the inbox and a reclaim
 *   pass tries it again; later messages of the same customer do not wait for it.
 * - An event handed over MAX_HANDOVERS times for any other reason is set aside too.
 * - A row is held by generation: `attempts` counts hand-overs, and the holder renews and starts a run
 *   only while the row's count is still the one it took it at. An instance whose lease ran out (a
 *   stall, an outage) therefore loses a waiting event to the instance that reclaimed it, and never
 *   runs it as well: any number of instances take events, none twice. At a shutdown the events
 *   waiting (not started) are given back at once (releaseWaiting), one more hand-over each.
 * - Times come from the service's clock, so tests move leases with a manual clock, not sleeps.
 */
import { type Tx, execute, queryRows } from '../platform/db/tx.js';
import { inboundText, type BotCall, type BotEvent } from './types.js';
import { CLAIM_ROWS } from '../platform/db/claims.js';

/** Hand-overs after which an event is given up. */
export const MAX_HANDOVERS = 20;
/** Rows one reclaim pass takes. */
export const RECLAIM_BATCH = 200;

export const messageKey = (messageId: bigint | string) => `message:${messageId}`;
export const runKey = (runId: bigint | string) => `schedule:${runId}`;
/** One change of a call: a notification delivered twice makes the same key (and the second finds it). */
export const callKey = (callRowId: bigint | string, status: BotCall['status']) => `call:${callRowId}:${status}`;

/** Records, in the storing transaction, that the bot has the message `messageId` to handle (leased to this instance). */
export async function addToInbox(tx: Tx, projectId: string, messageId: bigint, now: Date, leaseMs: number): Promise<void> {
  await execute(tx, messageInboxSql('SELECT $1::bigint, $2::text, $3::timestamptz, $4::timestamptz'), messageId, projectId, new Date(now.getTime() + leaseMs), now);
}

/**
 * The inbox rows of stored messages: `rows` yields (message_id, project_id, lease_until,
 * created_at). The one form of a message's inbox row, for addToInbox and for the inbound
 * message's one statement (through BotHook.enqueueSql).
 */
export function messageInboxSql(rows: string): string {
  return `INSERT INTO bot_inbox (key, kind, message_id, project_id, lease_until, created_at)
          SELECT 'message:' || r.message_id, 'message', r.message_id, r.project_id, r.lease_until, r.created_at
            FROM (${rows}) AS r(message_id, project_id, lease_until, created_at)`;
}

/** Records, in the transaction that fires a schedule's run, that the bot has the run to handle (leased to this instance). */
export async function addRunToInbox(tx: Tx, projectId: string, runId: bigint, now: Date, leaseMs: number): Promise<string> {
  const key = runKey(runId);
  await execute(tx,
    `INSERT INTO bot_inbox (key, kind, run_id, project_id, lease_until, created_at) VALUES ($1, 'schedule', $2::bigint, $3, $4::timestamptz, $5::timestamptz)`,
    key, runId.toString(), projectId, new Date(now.getTime() + leaseMs), now,
  );
  return key;
}

/**
 * Records, in the transaction that stores a call's change, that the bot has it to handle (leased to
 * this instance), when the project has a deployed bot (without one there is nobody to hand it to).
 * The key when it was recorded now; undefined when there is no bot or the change was recorded before.
 */
export async function addCallToInbox(tx: Tx, projectId: string, callRowId: bigint, call: BotCall, now: Date, leaseMs: number): Promise<string | undefined> {
  const key = callKey(callRowId, call.status);
  const rows = await queryRows<{ key: string }>(tx,
    `INSERT INTO bot_inbox (key, kind, call_id, payload, project_id, lease_until, created_at)
     SELECT $1, 'call', $2::bigint, $3::jsonb, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM bot_releases WHERE project_id = $4)
     ON CONFLICT (key) DO NOTHING RETURNING key`,
    key, String(callRowId), JSON.stringify(call), projectId, new Date(now.getTime() + leaseMs), now,
  );
  return rows[0]?.key;
}

/** Whether an earlier run of the schedule is still in the inbox (waiting, running or to be tried again). */
export async function scheduleRunPending(tx: Tx, projectId: string, schedule: string): Promise<boolean> {
  const rows = await queryRows<{ pending: number }>(tx,
    `SELECT 1 AS pending FROM bot_inbox i JOIN bot_schedule_runs r ON r.id = i.run_id
      WHERE r.project_id = $1 AND r.schedule = $2 AND i.set_aside_at IS NULL LIMIT 1`,
    projectId, schedule,
  );
  return rows.length > 0;
}

/** The bot handled the event (or it is gone): it leaves the inbox. A set-aside event stays. */
export async function removeFromInbox(tx: Tx, key: string): Promise<void> {
  await execute(tx, 'DELETE FROM bot_inbox WHERE key = $1 AND set_aside_at IS NULL', key);
}

/**
 * A run of the bot on the event begins; undefined when the event is no longer this holder's to run
 * (gone, set aside, or handed over to another instance since `handovers` was read).
 */
export async function markRunStarted(tx: Tx, key: string, handovers: number, now: Date): Promise<{ ranBefore: boolean } | undefined> {
  // `o` is the row as it was: a run started before (and not ended), an abnormal run or a hand-over
  // means an earlier run may have taken effects (its journal answers them: lib/bot/journal.ts).
  const [row] = await queryRows<{ ran_before: boolean }>(tx,
    `UPDATE bot_inbox b SET run_started_at = $2::timestamptz FROM bot_inbox o
      WHERE b.key = $1 AND o.key = b.key AND b.set_aside_at IS NULL AND b.attempts = $3::int
      RETURNING (o.run_started_at IS NOT NULL OR o.abnormal_runs > 0 OR o.attempts > 0) AS ran_before`,
    key, now, handovers,
  );
  return row && { ranBefore: row.ran_before };
}

/**
 * A run ended abnormally: counted, and the event is either set aside (at `max`) or given back to
 * the inbox at once for a reclaim pass to try again. Undefined when it is no longer there.
 */
export async function recordAbnormalRun(tx: Tx, key: string, reason: string, now: Date, max: number): Promise<{ runs: number; setAside: boolean } | undefined> {
  const [row] = await queryRows<{ abnormal_runs: number; set_aside: boolean }>(tx,
    `UPDATE bot_inbox SET abnormal_runs = abnormal_runs + 1, run_started_at = NULL, lease_until = $2::timestamptz,
            set_aside_at = CASE WHEN abnormal_runs + 1 >= $3::int THEN $2::timestamptz END,
            set_aside_reason = CASE WHEN abnormal_runs + 1 >= $3::int THEN $4::text END
      WHERE key = $1 AND set_aside_at IS NULL
      RETURNING abnormal_runs, set_aside_at IS NOT NULL AS set_aside`,
    key, now, max, reason,
  );
  return row && { runs: row.abnormal_runs, setAside: row.set_aside };
}

/** Sets the event aside for good (kept with its reason; never handed to the bot again). */
export async function setAside(tx: Tx, key: string, reason: string, now: Date): Promise<void> {
  await execute(tx, 'UPDATE bot_inbox SET set_aside_at = $2::timestamptz, set_aside_reason = $3, run_started_at = NULL WHERE key = $1 AND set_aside_at IS NULL', key, now, reason);
}

export interface SetAsideEvent {
  message_id: string;
  abnormal_runs: number;
  reason: string;
  set_aside_at: Date;
  received_at: Date;
}

/** A project's set-aside messages, newest first (a set-aside schedule run is in its schedule's runs). */
export async function listSetAside(tx: Tx, projectId: string, limit: number): Promise<SetAsideEvent[]> {
  return queryRows<SetAsideEvent>(tx,
    `SELECT m.wamid AS message_id, b.abnormal_runs, b.set_aside_reason AS reason, b.set_aside_at, b.created_at AS received_at
       FROM bot_inbox b JOIN messages m ON m.id = b.message_id
      WHERE b.project_id = $1 AND b.kind = 'message' AND b.set_aside_at IS NOT NULL ORDER BY b.set_aside_at DESC, b.message_id DESC LIMIT $2`,
    projectId, limit,
  );
}

/**
 * Keeps the events this instance still holds (waiting or running) from being taken by another.
 * `held` maps each key to its hand-overs when this instance took it: a row handed over since (its
 * lease ran out here, another instance's reclaim took it) is not renewed, and is returned as lost.
 */
export async function renewLeases(tx: Tx, held: ReadonlyMap<string, number>, now: Date, leaseMs: number): Promise<string[]> {
  if (!held.size) return [];
  const keys = [...held.keys()];
  const rows = await queryRows<{ key: string }>(tx,
    `UPDATE bot_inbox b SET lease_until = $3::timestamptz FROM unnest($1::text[], $2::int[]) AS h(key, attempts)
      WHERE b.key = h.key AND b.attempts = h.attempts RETURNING b.key`,
    keys, keys.map((k) => held.get(k)!), new Date(now.getTime() + leaseMs),
  );
  const renewed = new Set(rows.map((r) => r.key));
  return keys.filter((k) => !renewed.has(k));
}

/**
 * Gives back, at a shutdown, the events this instance holds and has not started: their lease ends
 * now, so another instance's next reclaim pass takes them (not after BOT_INBOX_LEASE_MS). Only rows
 * still of the generation held here and not running; one that starts here after this is refused
 * its run (markRunStarted), so none runs twice. The number given back.
 */
export async function releaseWaiting(tx: Tx, held: ReadonlyMap<string, number>, now: Date): Promise<number> {
  if (!held.size) return 0;
  const keys = [...held.keys()];
  return execute(tx,
    `UPDATE bot_inbox b SET lease_until = $3::timestamptz, attempts = b.attempts + 1 FROM unnest($1::text[], $2::int[]) AS h(key, attempts)
      WHERE b.key = h.key AND b.attempts = h.attempts AND b.run_started_at IS NULL AND b.set_aside_at IS NULL`,
    keys, keys.map((k) => held.get(k)!), now,
  );
}

export interface ReclaimedEvent {
  projectId: string;
  key: string;
  /** Hand-overs so far, this one included. */
  handovers: number;
  /** Abnormal runs so far, a run the dead process had started included. */
  abnormalRuns: number;
  /** The process that held it had started a run on it (it died mid-run). */
  diedMidRun: boolean;
  /** Undefined when what it names is gone (its message's project was deleted). */
  event?: BotEvent;
}

/** Takes up to RECLAIM_BATCH events whose lease ran out, oldest first, leased to the caller. */
export async function reclaimExpired(tx: Tx, now: Date, leaseMs: number): Promise<ReclaimedEvent[]> {
  // Ids the event carries are read as text (a run's id is a string in it); conversation_id is an int8 (bigint).
  const rows = await queryRows<{
    key: string; kind: string; project_id: string; attempts: number; abnormal_runs: number; died_mid_run: boolean; created_at: Date;
    wamid: string | null; type: string | null; content: Record<string, unknown> | null;
    conversation_id: bigint | null; state: string | null; phone: string | null; user_id: string | null; username: string | null; name: string | null;
    contact_kind: string | null; group_row_id: string | null;
    run_id: string | null; schedule: string | null; due_at: Date | null; trigger: string | null; cron: string | null; time_zone: string | null;
    call_payload: BotCall | null;
  }>(tx,
    `WITH due AS (
       SELECT key, run_started_at IS NOT NULL AS died_mid_run FROM bot_inbox
        WHERE lease_until <= $1::timestamptz AND set_aside_at IS NULL ORDER BY created_at, key LIMIT $3 ${CLAIM_ROWS}
     ), taken AS (
       UPDATE bot_inbox b SET lease_until = $2::timestamptz, attempts = b.attempts + 1,
              abnormal_runs = b.abnormal_runs + due.died_mid_run::int, run_started_at = NULL
         FROM due WHERE b.key = due.key
       RETURNING b.key, b.kind, b.message_id, b.run_id, b.call_id, b.payload, b.project_id, b.attempts, b.abnormal_runs, due.died_mid_run, b.created_at
     )
     SELECT t.key, t.kind, t.project_id, t.attempts, t.abnormal_runs, t.died_mid_run, t.created_at, m.wamid, m.type, m.content, c.id AS conversation_id, c.state, k.phone, k.user_id, k.username, k.name,
            k.kind AS contact_kind, (SELECT g.id::text FROM groups g WHERE g.contact_id = k.id) AS group_row_id,
            r.id::text AS run_id, r.schedule, r.due_at, r.trigger, s.cron, s.time_zone, CASE WHEN t.call_id IS NOT NULL THEN t.payload END AS call_payload
       FROM taken t
       LEFT JOIN messages m ON m.id = t.message_id
       LEFT JOIN conversations c ON c.id = m.conversation_id
       LEFT JOIN contacts k ON k.id = c.contact_id
       LEFT JOIN bot_schedule_runs r ON r.id = t.run_id
       LEFT JOIN bot_schedules s ON s.project_id = r.project_id AND s.name = r.schedule
      ORDER BY t.created_at, t.key`,
    now, new Date(now.getTime() + leaseMs), RECLAIM_BATCH,
  );
  return rows.map((r) => {
    let event: BotEvent | undefined;
    // A group message (docs/groups.md): its sender, as stored with it, is who wrote.
    const sender = r.contact_kind === 'group' ? (r.content?.group_sender as { phone?: string | null; user_id?: string | null; name?: string | null } | undefined) : undefined;
    if (r.kind === 'message' && r.wamid && r.conversation_id && sender && (sender.phone || sender.user_id) && r.group_row_id) {
      event = {
        kind: 'message',
        message: {
          id: r.wamid, from: (sender.phone?.replace(/^\+/, '') ?? sender.user_id)!, type: r.type!, text: inboundText(r.type!, r.content ?? {}), raw: r.content ?? {},
          conversation: { id: Number(r.conversation_id), state: r.state!, kind: 'group', group_id: Number(r.group_row_id) },
          contact: { phone: sender.phone?.replace(/^\+/, '') ?? null, user_id: sender.user_id ?? null, username: null, name: sender.name ?? null }, received_at: r.created_at.toISOString(),
        },
      };
    } else if (r.kind === 'message' && r.wamid && (r.phone || r.user_id) && r.conversation_id) {
      event = {
        kind: 'message',
        message: {
          id: r.wamid, from: (r.phone ?? r.user_id)!, type: r.type!, text: inboundText(r.type!, r.content ?? {}), raw: r.content ?? {},
          conversation: { id: Number(r.conversation_id), state: r.state!, kind: 'individual' },
          contact: { phone: r.phone, user_id: r.user_id, username: r.username, name: r.name }, received_at: r.created_at.toISOString(),
        },
      };
    } else if (r.kind === 'schedule' && r.run_id && r.schedule && r.due_at && r.cron && r.time_zone) {
      event = {
        kind: 'schedule',
        schedule: { name: r.schedule, run_id: r.run_id, due_at: r.due_at.toISOString(), trigger: r.trigger as 'cron', cron: r.cron, time_zone: r.time_zone },
      };
    } else if (r.kind === 'call' && r.call_payload) {
      event = { kind: 'call', call: r.call_payload, context: { received_at: r.created_at.toISOString() } };
    }
    return { projectId: r.project_id, key: r.key, handovers: r.attempts, abnormalRuns: r.abnormal_runs, diedMidRun: r.died_mid_run, event };
  });
}
