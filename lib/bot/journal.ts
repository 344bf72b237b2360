/**
 * The journal of a bot event's effects: each helper call that takes effect (a table write, an emit,
 * a fetch, a file read, a send: the host API's `journaled` operations) is recorded with its answer,
 * by (event, call sequence). A later run of the same event (after a crash of its sandbox process,
 * a timeout, a memory limit, a restart) gets the recorded answer of each such call instead of
 * running it again, so an event takes effect once however many times it runs.
 *
 * Policy and why:
 * - The sequence counts the event's journaled calls in the order the bot made them (the order they
 *   reach the service, which is the bot's program order: calls leave the isolate synchronously,
 *   even under Promise.all). Reads (tables.select, secrets.get, log) are not counted: a replay
 *   that reads differently still lines its effects up.
 * - A replay is checked, not trusted: the recorded call's op and arguments (a sha256) must match
 *   the new call's at that place; a bot that asks for something else there gets it run for real,
 *   and the recorded one is kept.
 * - Only answers that took effect are recorded (`ok: true`): a refused or failed call did nothing,
 *   and running it again is what a retry is for.
 * - One event runs in one sandbox at a time (lib/bot/runtime.ts), so the calls of a run are that
 *   event's: the sandbox hands them here with the event's journal.
 * - The journal is read once per run, and only when the event had run before (its inbox row says
 *   so); a first run only writes. Rows are deleted with the event's inbox row (a foreign key).
 * - The window between an effect and its record (a crash right then) is the one left: sends keep
 *   their references there (lib/bot/runtime.ts, sendRef), so a reply is still not sent twice.
 */
import { createHash } from 'node:crypto';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';

export class EventJournal {
  private seq = 0;
  private recorded?: Map<number, { op: string; argsHash: string; answer: string }>;
  private loading?: Promise<void>;

  /** `replay`: the event ran before, so its recorded calls are read (once) and answered from. */
  constructor(
    private readonly sql: Tx,
    readonly projectId: string,
    readonly eventKey: string,
    private readonly replay: boolean,
    private readonly now: () => Date,
  ) {}

  /** Runs `perform` once for this event: the recorded answer when a earlier run made the same call here. */
  async call(op: string, argsJson: string, perform: () => Promise<string>): Promise<string> {
    const seq = ++this.seq;
    const argsHash = createHash('sha256').update(op).update('\0').update(argsJson).digest('hex');
    if (this.replay) {
      await (this.loading ??= this.load());
      const before = this.recorded?.get(seq);
      if (before && before.op === op && before.argsHash === argsHash) return before.answer;
      if (before) return perform();
    }
    const answer = await perform();
    if (answer.startsWith('{"ok":true')) await this.record(seq, op, argsHash, answer);
    return answer;
  }

  private async load(): Promise<void> {
    const rows = await queryRows<{ seq: number; op: string; args_hash: string; answer: string }>(this.sql,
      'SELECT seq, op, args_hash, answer FROM bot_call_journal WHERE event_key = $1 AND project_id = $2',
      this.eventKey, this.projectId,
    );
    this.recorded = new Map(rows.map((r) => [r.seq, { op: r.op, argsHash: r.args_hash, answer: r.answer }]));
  }

  /** Best effort: an event already settled (its inbox row gone) has nothing to record. */
  private async record(seq: number, op: string, argsHash: string, answer: string): Promise<void> {
    await execute(this.sql,
      `INSERT INTO bot_call_journal (event_key, seq, project_id, op, args_hash, answer, created_at)
       SELECT key, $2::int, $3, $4, $5, $6, $7::timestamptz FROM bot_inbox WHERE key = $1 AND project_id = $3
       ON CONFLICT (event_key, seq) DO NOTHING`,
      this.eventKey, seq, this.projectId, op, argsHash, answer, this.now(),
    ).catch(() => undefined);
  }
}
