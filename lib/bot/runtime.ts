/**
 * The production bot runtime: hands each stored inbound message to the project's deployed bundle.
 *
 * Policy and why:
 * - One event per sandbox (V8 isolate) at a time: a project's sandboxes are a pool of its active
 *   release (a slot), made on demand in the project's own sandbox process (lib/sandbox/supervisor.ts)
 *   and given back after each event while usable, so a helper call is always that event's (its
 *   journal, its send references) and a time or memory limit stops only the event that overran.
 *   The slot is replaced when a deploy or rollback switches the release (the active release is
 *   re-read at most once a second, and at once after a deploy or rollback in this process). At
 *   most MAX_WARM_SANDBOXES slots stay; the least recently used goes first.
 * - Order: one conversation's messages are handled one at a time, in arrival order. A project's
 *   different conversations run side by side, up to MAX_CONCURRENT_PER_PROJECT at once (one at a
 *   time for SOLO_MS after its process ended under several events), and different projects are
 *   independent.
 * - A project's backlog is capped (MAX_QUEUED_PER_PROJECT); beyond it a message is not queued here
 *   (never without bound) but stays in the bot's inbox, handed over again when its lease runs out.
 * - CPU: a project's bots share BOT_CPU_MS_PER_MINUTE (lib/bot/cpu-budget.ts); past it, its events
 *   wait for the next minute as they do past the rate below.
 * - Rate: a project's bot handles at most BOT_EVENTS_PER_MINUTE messages a minute, counted in the
 *   shared counters so all instances agree (lib/bot/rates.ts). A message past it is not lost: it
 *   waits here (its lease renewed, its conversation's later messages behind it) until the minute
 *   turns, and the bot log says so once a minute. On shutdown a waiting message stays in the inbox.
 * - Work the bot left running after an event (lib/sandbox/sandbox.ts) is stopped past its CPU bound and
 *   logged; an event caught in that stop was not at fault and runs again (up to MAX_RERUNS, uncounted).
 * - The inbound webhook answers the channel without waiting for the bot. A paused project's bot
 *   does not run (seen within RELEASE_CHECK_MS).
 * - Every stopped invocation (throw, timeout, memory limit, failed start-up) is written to the
 *   project's bot log for the operator and counted in the metrics (bot_event_failures_total);
 *   nothing the bot does can throw into the service.
 * - Sandboxes run in a supervised child process per project (lib/sandbox/supervisor.ts): a failure
 *   isolated-vm cannot contain ends that project's child only. An event it ended alone is charged
 *   an abnormal run; events it ended together are not (which one ended it is unknown): they run
 *   again, uncounted, one at a time, so the culprit is found alone (in a shared process, its
 *   projects move out as suspects instead, each still running several events at once).
 * - Effects once: each event's helper calls that take effect are journaled (lib/bot/journal.ts); a
 *   run of the same event again is answered from the journal, so nothing is done twice.
 * - An event whose run ends abnormally (`crashed`, `timeout`, `memory_limit`) goes back to the
 *   inbox and is tried again by a reclaim pass, up to BOT_MAX_ABNORMAL_RUNS runs; then it is set
 *   aside with its reason (lib/bot/inbox.ts), logged, and never replayed. A bot that throws has
 *   handled its event (logged, not retried).
 * - Events of every kind take this one path (lib/bot/inbox.ts): an inbound message, a run of one of
 *   the bot's schedules (lib/bot/schedules.ts; `onSchedule`, one run at a time per schedule, in the
 *   same sandbox, limits and rate as messages, its sends through the same helpers and rules). A
 *   schedule run's outcome (start, duration, error at the author's line) is written to its run.
 * - Durable: each message is in the bot's inbox (lib/bot/inbox.ts) from the transaction that
 *   stored it until it is handled here; the leases of the messages this process holds are renewed.
 *   A message this process could not finish (its release could not be read through an outage, or
 *   the process died) is handed over again by a reclaim pass once its lease runs out.
 */
import type { Deps } from '../deps.js';
import type { BotDeps } from './helpers.js';
import { loadRelease } from '../deploy/deployments.js';
import { DEFAULT_LIMITS, StartupError, type Outcome, type SandboxLimits } from '../sandbox/sandbox.js';
import { SandboxBusy, SandboxCrashed, sandboxSupervisor, type BotSandbox } from '../sandbox/supervisor.js';
import { configureBuilds } from '../deploy/build.js';
import { CpuBudget } from './cpu-budget.js';
import { EventJournal } from './journal.js';
import { takeBotEvent } from './rates.js';
import { backoff, runHelper, type Invocation } from './helpers.js';
import { hostOpBounds } from './host-api.js';
import { IsolateGrowth } from './isolate-growth.js';
import { redactedBotLog } from './secrets.js';
import { consentMarkOf } from '../consent/keywords.js';
import type { BotCall, BotCapacity, BotEvent, BotHook, BotInboundMessage } from './types.js';
import { queryRows, type Tx } from '../platform/db/tx.js';
import { waitInLine } from '../platform/wait-in-line.js';
import { addCallToInbox, addToInbox, messageInboxSql, markRunStarted, MAX_HANDOVERS, messageKey, reclaimExpired, recordAbnormalRun, releaseWaiting, removeFromInbox, renewLeases, setAside } from './inbox.js';
import { runEnded, runStarted, type RunOutcome } from './schedules.js';
import { createHash } from 'node:crypto';
import { HUMAN_STATE } from '../conversations/conversations.js';
import type { InboundEvent } from './event-types.js';

export const MAX_QUEUED_PER_PROJECT = 1000;
export const MAX_CONCURRENT_PER_PROJECT = 16;
/**
 * A busy project may run up to this many events at once while the instance has room: while fewer
 * than a quarter of BOT_SANDBOX_IN_FLIGHT are in flight (work-conserving, so one project's burst
 * is not held to 16 on an idle instance, and the fair bound still holds: docs/bot.md).
 */
export const MAX_BORROWED_PER_PROJECT = 64;
export const MAX_WARM_SANDBOXES = 200;
/** How long an event waits for a sandbox given back before the growth bound is asked again (lib/bot/isolate-growth.ts). */
const ISOLATE_WAIT_MS = 125;
/** Reruns of an event in this process that was not at fault (stopped for another's leftover work, or its process ended under several events). */
export const MAX_RERUNS = 3;
/** After its process ended under several events, a project runs one event at a time for this long, so the culprit is found alone. */
export const SOLO_MS = 60_000;
/** How long the active release id is trusted before it is read again (other processes may deploy). */
export const RELEASE_CHECK_MS = 1000;
/** Tries at reading a project's release before an event is given up (about 10 s of backoff in all). */
export const SANDBOX_ATTEMPTS = 8;
/** Tries at deleting a handled message from the inbox (about 10 s); past them it may be handled again. */
export const SETTLE_ATTEMPTS = 8;
/** How often a message waiting for the next rate window looks at the clock (the service's clock: tests move it). */
const RATE_POLL_MS = 200;

/** A message not handled by this process now (shutdown while it waited): it stays in the inbox. */
class NotNow extends Error {}

/** One sandbox (isolate) of a project: it runs one event at a time, so its helper calls are that event's. */
interface Pooled {
  sandbox: BotSandbox;
  /** When it was last given back (performance.now()): idle past BOT_SANDBOX_IDLE_MS, it is disposed. */
  idleSince?: number;
  /** The event it runs now: its rights, journal and send references; helpers answer only while set. */
  inv?: Invocation;
}

interface Slot {
  deploymentId: string;
  bundle: string;
  sourceMap?: string;
  /** Sandboxes of this release ready for an event. */
  idle: Pooled[];
  /** Events of this release in flight. */
  running: number;
  /** Start-up failed for this release: not retried until the next release. */
  broken?: boolean;
  /** How its pool grows (lib/bot/isolate-growth.ts). */
  growth: IsolateGrowth;
  /** Events waiting for a sandbox given back (the growth bound): handed one directly. */
  waiting: Array<(pooled: Pooled | undefined) => void>;
}

interface ProjectState {
  queued: number;
  running: number;
  waiters: Array<() => void>;
  /** Per conversation: the tail of its chain of events. */
  chains: Map<string, Promise<void>>;
}

/** The hand-overs of a held event another instance has taken since (lib/bot/inbox.ts): never a row's. */
const LOST = -1;

export class BotRuntime implements BotHook {
  private deps?: BotDeps;
  private readonly slots = new Map<string, Slot>();
  private readonly creating = new Map<string, Promise<Slot | undefined>>();
  private readonly projects = new Map<string, ProjectState>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly releases = new Map<string, { id: string | undefined; at: number }>();
  /**
   * Inbox events this process holds (queued or running): key → the row's hand-overs when this
   * process took it (lib/bot/inbox.ts: held by generation). Their leases are renewed.
   */
  private readonly held = new Map<string, number>();
  /** Per project: until when it runs one event at a time (its process ended under several events). */
  private readonly solo = new Map<string, number>();
  private cpu?: CpuBudget;
  /** Per project: the end of the minute whose exhausted CPU budget the bot log was told of. */
  private readonly cpuLogged = new Map<string, number>();
  private renewTimer?: NodeJS.Timeout;
  private sweepTimer?: NodeJS.Timeout;
  private readonly releaseListeners: Array<(projectId: string) => void> = [];
  private closed = false;
  /** Per project over its event rate: the end of the window its waiting messages wait for. */
  private readonly gates = new Map<string, Promise<void>>();

  constructor(readonly limits: SandboxLimits = DEFAULT_LIMITS) {}

  /** Called by createApp with the app's dependencies. */
  attach(deps: BotDeps): void {
    this.deps = deps;
    const supervisor = sandboxSupervisor();
    this.cpu = new CpuBudget(deps, supervisor);
    const cpu = this.cpu;
    supervisor.configure({
      processes: deps.config.botSandboxProcesses,
      sharedProcesses: deps.config.botSandboxSharedProcesses,
      nice: deps.config.botSandboxNice,
      maxRssMb: deps.config.botSandboxMaxRssMb,
      sharedMaxRssMb: deps.config.botSandboxSharedMaxRssMb,
      inFlight: deps.config.botSandboxInFlight,
      idleMs: deps.config.botSandboxIdleMs,
      onCpu: (projectId, ms) => cpu.spent(projectId, ms),
      onMoved: (projectId, _reason, message) => void this.log(projectId, { level: 'warn', kind: 'moved', message }),
    });
    clearInterval(this.sweepTimer);
    this.sweepTimer = setInterval(() => this.sweepIdle(), Math.max(250, Math.min(deps.config.botSandboxIdleMs / 4, 15_000)));
    this.sweepTimer.unref();
    // A project's builds (deploys, previews) spend its budget too.
    configureBuilds({ onCpu: (projectId, ms) => cpu.spent(projectId, ms) });
    clearInterval(this.renewTimer);
    this.renewTimer = setInterval(() => void this.renew(), Math.max(200, deps.config.botInboxLeaseMs / 3));
    this.renewTimer.unref();
  }

  onInboundMessage(projectId: string, inboxId: bigint, message: BotInboundMessage): void {
    this.onEvent(projectId, messageKey(inboxId), { kind: 'message', message });
  }

  onEvent(projectId: string, inboxKey: string, event: BotEvent, handovers = 0): void {
    if (this.closed || !this.deps) return; // closing: the inbox keeps it for a reclaim pass
    // Already queued here, and its lease ran out and came back by this process's own reclaim pass:
    // the queued run goes on under the new generation.
    if (this.held.has(inboxKey)) {
      if (handovers > this.held.get(inboxKey)!) this.held.set(inboxKey, handovers);
      return;
    }
    let p = this.projects.get(projectId);
    if (!p) this.projects.set(projectId, (p = { queued: 0, running: 0, waiters: [], chains: new Map() }));
    if (p.queued >= MAX_QUEUED_PER_PROJECT) {
      void this.log(projectId, { level: 'warn', kind: 'error', message: `${labelOf(event)} waits in the inbox: ${MAX_QUEUED_PER_PROJECT} events are already queued; it is handed to the bot again later.` });
      return;
    }
    p.queued++;
    this.held.set(inboxKey, handovers);
    const state = p;
    // One conversation's messages and calls, and one schedule's runs, one at a time and in order.
    const key = event.kind === 'message' ? event.message.from : event.kind === 'call' ? event.call.from : `schedule:${event.schedule.name}`;
    const run = (state.chains.get(key) ?? Promise.resolve())
      .then(() => this.runToEnd(projectId, state, inboxKey, event))
      .then(
        (done) => (done ? this.settle(inboxKey) : undefined),
        // Not handled: left in the inbox for a reclaim pass.
        (e) => {
          if (!(e instanceof NotNow)) this.deps?.logger.error(`bot runtime: ${e instanceof Error ? e.stack : String(e)}`);
        },
      )
      .finally(() => {
        this.held.delete(inboxKey);
        state.queued--;
        if (state.chains.get(key) === run) state.chains.delete(key);
        if (state.queued === 0 && this.projects.get(projectId) === state) this.projects.delete(projectId);
      });
    state.chains.set(key, run);
    this.inFlight.add(run);
    void run.finally(() => this.inFlight.delete(run));
  }

  /** Admits and runs the event, again while it was not at fault (MAX_RERUNS); true when it was handled. */
  private async runToEnd(projectId: string, state: ProjectState, inboxKey: string, event: BotEvent): Promise<boolean> {
    for (let reruns = 0; ; reruns++) {
      await this.admit(projectId, labelOf(event));
      const result = await this.withTurn(projectId, state, () => this.handle(projectId, inboxKey, event, reruns));
      if (result !== 'again') return result === 'done';
    }
  }

  /**
   * Resolves when the project's bot may handle one more event: within its CPU budget
   * (BOT_CPU_MS_PER_MINUTE) and under BOT_EVENTS_PER_MINUTE.
   */
  private async admit(projectId: string, label: string): Promise<void> {
    const deps = this.deps!;
    for (;;) {
      if (this.closed) throw new NotNow();
      const gate = this.gates.get(projectId);
      if (gate) {
        await gate;
        continue;
      }
      const cpuUntil = await this.cpu?.exhausted(projectId);
      if (cpuUntil) {
        if (this.cpuLogged.get(projectId) !== cpuUntil.getTime()) {
          this.cpuLogged.set(projectId, cpuUntil.getTime());
          if (this.cpuLogged.size > 10 * MAX_WARM_SANDBOXES) this.cpuLogged.delete(this.cpuLogged.keys().next().value as string);
          void this.log(projectId, { level: 'warn', kind: 'error', message: `${label} and later events wait: the bot used its CPU budget of ${deps.config.botCpuMsPerMinute} ms this minute (BOT_CPU_MS_PER_MINUTE); they run from ${cpuUntil.toISOString()}, in order.` });
        }
        const opened = this.waitUntil(cpuUntil).finally(() => this.gates.delete(projectId));
        this.gates.set(projectId, opened);
        continue;
      }
      const rate = await takeBotEvent(deps, projectId);
      if (rate.allowed) return;
      if (rate.count === deps.config.botEventsPerMinute + 1) {
        void this.log(projectId, { level: 'warn', kind: 'error', message: `${label} and later events wait: the bot handles ${deps.config.botEventsPerMinute} events a minute (BOT_EVENTS_PER_MINUTE); they run from ${rate.resetAt.toISOString()}, in order.` });
      }
      if (!this.gates.has(projectId)) {
        const opened = this.waitUntil(rate.resetAt).finally(() => this.gates.delete(projectId));
        this.gates.set(projectId, opened);
      }
    }
  }

  /** Waits until the service's clock reaches `at` (or shutdown). */
  private async waitUntil(at: Date): Promise<void> {
    while (!this.closed && this.deps!.clock.now().getTime() < at.getTime()) {
      await new Promise((r) => setTimeout(r, Math.max(1, Math.min(RATE_POLL_MS, at.getTime() - this.deps!.clock.now().getTime()))));
    }
  }

  /** A stored inbound message enters the inbox in the transaction that stores it (BotHook). */
  async enqueue(tx: Tx, projectId: string, messageId: bigint, now: Date): Promise<void> {
    if (!this.deps) throw new Error('the bot runtime is not attached');
    await addToInbox(tx, projectId, messageId, now, this.deps.config.botInboxLeaseMs);
  }

  /** A call's change enters the inbox in the transaction that stores it, when the project has a deployed bot (BotHook). */
  async enqueueCall(tx: Tx, projectId: string, callRowId: bigint, call: BotCall, now: Date): Promise<string | undefined> {
    if (!this.deps) throw new Error('the bot runtime is not attached');
    return addCallToInbox(tx, projectId, callRowId, call, now, this.deps.config.botInboxLeaseMs);
  }

  /** enqueue as SQL, for the inbound message's one statement (BotHook). */
  enqueueSql(rows: string): string {
    return messageInboxSql(rows);
  }

  /** A deploy or rollback switched the project's release: read it again at the next event. */
  releaseChanged(projectId: string): void {
    this.releases.delete(projectId);
    for (const listener of this.releaseListeners) listener(projectId);
  }

  /** Makes one sandbox of the project's release ready (a schedule's run is due). */
  async warm(projectId: string): Promise<void> {
    if (this.closed || !this.deps) return;
    const slot = await this.sandboxWithRetry(projectId).catch(() => undefined);
    if (!slot || slot.broken || slot.idle.length > 0) return;
    const pooled = await this.takeSandbox(projectId, slot).catch(() => undefined);
    if (pooled) this.giveBack(projectId, slot, pooled);
  }

  onReleaseChanged(listener: (projectId: string) => void): void {
    this.releaseListeners.push(listener);
  }

  private async activeRelease(projectId: string): Promise<string | undefined> {
    const known = this.releases.get(projectId);
    const now = performance.now();
    if (known && now - known.at < RELEASE_CHECK_MS) return known.id;
    // A paused or deleted project's bot does not run (its keys are refused too).
    const rows = await queryRows<{ deployment_id: string | null; status: string }>(
      this.deps!.db.sql,
      `SELECT r.deployment_id, p.status FROM projects p LEFT JOIN bot_releases r ON r.project_id = p.id WHERE p.id = $1`,
      projectId,
    );
    const row = rows[0];
    const id = row && row.status === 'active' ? (row.deployment_id ?? undefined) : undefined;
    this.releases.set(projectId, { id, at: now });
    if (this.releases.size > 10 * MAX_WARM_SANDBOXES) this.releases.delete(this.releases.keys().next().value as string);
    return id;
  }

  /** Resolves when every queued event has been handled (tests and the bench). */
  async whenIdle(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  /** One reclaim pass (the job runner's `bot-inbox-reclaim`): events whose lease ran out go to this process's bot. */
  async reclaim(): Promise<number> {
    const deps = this.deps;
    if (this.closed || !deps) return 0;
    const taken = await reclaimExpired(deps.db.sql, deps.clock.now(), deps.config.botInboxLeaseMs);
    const max = deps.config.botMaxAbnormalRuns;
    for (const e of taken) {
      if (!e.event) {
        await removeFromInbox(deps.db.sql, e.key);
        continue;
      }
      const reason = e.abnormalRuns >= max
        ? `its bot runs ended abnormally ${e.abnormalRuns} times (the last one ended with the process running it)`
        : e.handovers > MAX_HANDOVERS ? `it was handed over ${MAX_HANDOVERS} times without being handled` : undefined;
      if (reason) {
        await setAside(deps.db.sql, e.key, reason, deps.clock.now());
        if (e.event.kind === 'schedule') await runEnded(deps.db.sql, e.event.schedule.run_id, deps.clock.now(), { outcome: 'set_aside', error: `Set aside: ${reason}.` });
        await this.log(e.projectId, { level: 'error', kind: 'set_aside', message: `${labelOf(e.event)} was set aside and will not be handed to the bot again: ${reason}.` });
        continue;
      }
      this.onEvent(e.projectId, e.key, e.event, e.handovers);
    }
    return taken.length;
  }

  private async renew(): Promise<void> {
    if (!this.held.size || !this.deps) return;
    const mine = new Map([...this.held].filter(([, handovers]) => handovers !== LOST));
    const lost = await renewLeases(this.deps.db.sql, mine, this.deps.clock.now(), this.deps.config.botInboxLeaseMs).catch((e) => {
      this.deps?.logger.warn(`bot runtime: inbox leases not renewed: ${e instanceof Error ? e.message : String(e)}`);
      return [];
    });
    // Handed over to another instance (its lease ran out here): when its turn comes it is not run
    // here (no row has LOST hand-overs, so markRunStarted refuses it); said once, for the operator.
    for (const key of lost) if (this.held.has(key)) this.held.set(key, LOST);
    if (lost.length) this.deps.logger.warn('bot runtime: events held here were taken over by another instance after their lease ran out; they run there', { events: lost.length });
  }

  /** The event was handled: out of the inbox, retried through an outage (else it would run again). */
  private async settle(inboxKey: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await removeFromInbox(this.deps!.db.sql, inboxKey);
      } catch (e) {
        if (attempt >= SETTLE_ATTEMPTS) {
          this.deps?.logger.warn(`bot runtime: a handled message stays in the inbox and may be handled again: ${e instanceof Error ? e.message : String(e)}`);
          return;
        }
        await backoff(attempt);
      }
    }
  }

  /**
   * Disposes isolates idle past BOT_SANDBOX_IDLE_MS: a deployed project that is not talking costs
   * no sandbox memory (its next event makes an isolate in milliseconds).
   */
  private sweepIdle(): void {
    const idleMs = this.deps?.config.botSandboxIdleMs ?? 60_000;
    const now = performance.now();
    for (const slot of this.slots.values()) {
      slot.idle = slot.idle.filter((p) => {
        if (now - (p.idleSince ?? now) <= idleMs) return true;
        p.sandbox.dispose();
        return false;
      });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.renewTimer);
    clearInterval(this.sweepTimer);
    // Events waiting here go to another instance's next reclaim pass at once, not after their lease.
    const mine = new Map([...this.held].filter(([, handovers]) => handovers !== LOST));
    if (this.deps && mine.size) {
      const given = await releaseWaiting(this.deps.db.sql, mine, this.deps.clock.now()).catch(() => 0);
      if (given) this.deps.logger.info('bot runtime: events waiting here given back to the inbox at shutdown', { events: given });
    }
    await this.whenIdle();
    for (const slot of this.slots.values()) this.disposeIdle(slot);
    this.slots.clear();
  }

  /** Undefined while the project's bots are within their CPU budget, else when the minute ends (BotHook). */
  async cpuExhausted(projectId: string): Promise<Date | undefined> {
    return this.cpu?.exhausted(projectId);
  }

  /** Where the project's bots stand now (BotHook): CPU this minute, this instance's placement and events. */
  async capacity(projectId: string): Promise<BotCapacity> {
    const config = this.deps!.config;
    const minute = await this.cpu?.state(projectId);
    const spent = minute?.count ?? 0;
    const supervisor = sandboxSupervisor();
    const placed = supervisor.placement(projectId);
    const proc = supervisor.processOf(projectId);
    const state = this.projects.get(projectId);
    return {
      cpu: {
        spent_ms: Math.round(spent),
        burst_ms: config.botCpuBurstMs,
        budget_ms: config.botCpuMsPerMinute,
        state: spent >= config.botCpuMsPerMinute ? 'exhausted' : spent >= config.botCpuBurstMs ? 'past_burst' : 'within',
        resets_at: minute ? minute.resetAt.toISOString() : null,
      },
      sandbox: {
        process: placed.process,
        reason: placed.reason ?? null,
        until: placed.untilMs === undefined ? null : new Date(this.deps!.clock.now().getTime() + placed.untilMs).toISOString(),
        pid: proc?.pid ?? null,
        rss_mb: proc ? proc.rssMb : null,
      },
      events: { running: state?.running ?? 0, queued: state?.queued ?? 0 },
    };
  }

  /** Runs `fn` when fewer than MAX_CONCURRENT_PER_PROJECT of the project's events run (one, in solo mode). */
  private async withTurn<T>(projectId: string, p: ProjectState, fn: () => Promise<T>): Promise<T> {
    for (;;) {
      const soloUntil = this.solo.get(projectId);
      if (soloUntil !== undefined && soloUntil < performance.now()) this.solo.delete(projectId);
      const limit = this.solo.has(projectId) ? 1 : MAX_CONCURRENT_PER_PROJECT;
      if (p.running < limit) break;
      if (limit > 1 && p.running < MAX_BORROWED_PER_PROJECT && this.roomToBorrow()) break;
      await new Promise<void>((resolve) => p.waiters.push(resolve));
    }
    p.running++;
    try {
      return await fn();
    } finally {
      p.running--;
      p.waiters.shift()?.();
    }
  }

  /** The instance has room for a project's events past MAX_CONCURRENT_PER_PROJECT. */
  private roomToBorrow(): boolean {
    const slots = sandboxSupervisor().slots;
    return slots.inFlightNow < slots.capacity / 4;
  }

  private log(projectId: string, entry: { level: string; kind: string; message: string; deploymentId?: string }): Promise<void> {
    // The bot's texts (its errors) are in it: the project's secret values are redacted.
    return redactedBotLog(this.deps!, projectId, entry).catch((e) => {
      this.deps?.logger.warn(`bot log not written: ${e}`);
    });
  }

  /** The project's active release as a slot (its sandboxes made on demand); undefined when none. */
  private async sandboxFor(projectId: string): Promise<Slot | undefined> {
    const active = await this.activeRelease(projectId);
    if (!active) return undefined;
    const slot = this.slots.get(projectId);
    if (slot && slot.deploymentId === active) {
      // Most recently used last (Map order).
      this.slots.delete(projectId);
      this.slots.set(projectId, slot);
      return slot;
    }
    // One load per project at a time: events arriving together share it.
    let pending = this.creating.get(projectId);
    if (!pending) {
      pending = this.createSlot(projectId, slot).finally(() => this.creating.delete(projectId));
      this.creating.set(projectId, pending);
    }
    return pending;
  }

  private async createSlot(projectId: string, old: Slot | undefined): Promise<Slot | undefined> {
    const deps = this.deps!;
    if (old) this.disposeIdle(old);
    this.slots.delete(projectId);
    for (const [id, s] of this.slots) {
      if (this.slots.size < MAX_WARM_SANDBOXES) break;
      if (s.running > 0) continue;
      this.disposeIdle(s);
      this.slots.delete(id);
    }
    const release = await loadRelease(deps.db.sql, projectId);
    if (!release) return undefined;
    const slot: Slot = { deploymentId: release.deploymentId, bundle: release.bundle, sourceMap: release.sourceMap, idle: [], running: 0, growth: new IsolateGrowth(), waiting: [] };
    this.slots.set(projectId, slot);
    return slot;
  }

  private disposeIdle(slot: Slot): void {
    for (const p of slot.idle.splice(0)) p.sandbox.dispose();
    for (const wake of slot.waiting.splice(0)) wake(undefined);
  }

  /** A sandbox given back to this slot within ISOLATE_WAIT_MS, or undefined (then the bound is asked again). */
  private waitForGivenBack(slot: Slot): Promise<Pooled | undefined> {
    return waitInLine(slot.waiting, ISOLATE_WAIT_MS, undefined);
  }

  /**
   * A sandbox of the slot's release for one event: an idle one, or a new one in the project's own
   * sandbox process. StartupError marks the release broken (logged once); SandboxCrashed and
   * SandboxBusy are thrown to the event.
   */
  private async takeSandbox(projectId: string, slot: Slot): Promise<Pooled | undefined> {
    for (;;) {
      const ready = slot.idle.pop();
      if (ready) {
        if (ready.sandbox.usable) return ready;
        ready.sandbox.dispose();
        continue;
      }
      if (this.closed || slot.broken || this.slots.get(projectId) !== slot || !slot.growth.mustWait(performance.now(), slot.running, slot.idle.length)) break;
      const given = await this.waitForGivenBack(slot);
      if (given) return given;
    }
    slot.growth.note(performance.now());
    const deps = this.deps!;
    const pooled: Partial<Pooled> = {};
    try {
      pooled.sandbox = await sandboxSupervisor().create(projectId, slot.bundle, slot.sourceMap, (op, args, call) => runHelper(deps, pooled.inv, op, args, call), this.limits, {
        onStopped: (_reason, message) => void this.log(projectId, { level: 'error', kind: 'timeout', message, deploymentId: slot.deploymentId }),
        ops: hostOpBounds(),
      });
      return pooled as Pooled;
    } catch (e) {
      if (e instanceof SandboxCrashed || e instanceof SandboxBusy) throw e;
      if (slot.broken) return undefined;
      slot.broken = true;
      const where = e instanceof StartupError && e.location ? ` (${e.location.file}:${e.location.line}:${e.location.column})` : '';
      await this.log(projectId, { level: 'error', kind: e instanceof StartupError && e.kind !== 'error' ? e.kind : 'startup', message: `${e instanceof Error ? e.message : String(e)}${where}`, deploymentId: slot.deploymentId });
      return undefined;
    }
  }

  /** Back to the slot's idle sandboxes when still usable and the slot still current; else disposed. */
  private giveBack(projectId: string, slot: Slot, pooled: Pooled): void {
    pooled.inv = undefined;
    pooled.idleSince = performance.now();
    const waiter = pooled.sandbox.usable && this.slots.get(projectId) === slot && !this.closed ? slot.waiting.shift() : undefined;
    if (waiter) return waiter(pooled);
    if (pooled.sandbox.usable && this.slots.get(projectId) === slot && !this.closed && slot.idle.length < MAX_CONCURRENT_PER_PROJECT) slot.idle.push(pooled);
    else pooled.sandbox.dispose();
  }

  /**
   * The slot for an event, read again after a database error (a connection cut, a failover):
   * nothing has run yet, so a retry cannot answer twice, and giving up would drop the message.
   */
  private async sandboxWithRetry(projectId: string): Promise<Slot | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.sandboxFor(projectId);
      } catch (e) {
        if (attempt >= SANDBOX_ATTEMPTS || this.closed) throw e;
        this.deps?.logger.warn(`bot runtime: reading the release failed (${e instanceof Error ? e.message : String(e)}); retrying`, { project_id: projectId });
        await backoff(attempt);
      }
    }
  }

  /**
   * The send references of one event (a message event's sends to its customer; a schedule run's,
   * numbered per recipient): the same event run again makes the same references in the same order,
   * so what it had sent is not sent twice, even where the journal's record of a send was lost
   * (a crash between the send and its record). A message event's send to another number has none.
   */
  private sendRefs(inboxKey: string, event: BotEvent): (recipient: string) => string | undefined {
    if (event.kind === 'message') {
      let sends = 0;
      // snd_: our references, which statuses echo (inbound.ts); a message's are named by its id.
      return (recipient) => (recipient === event.message.from ? `snd_bot${inboxKey.slice('message:'.length)}_${++sends}` : undefined);
    }
    if (event.kind === 'call') {
      let sends = 0;
      // call:<id>:<status> → snd_botcall<id>_<status>_<n>: a bot's (authors.ts), one per change.
      const [, id, status] = inboxKey.split(':');
      return (recipient) => (recipient === event.call.from ? `snd_botcall${id}_${status}_${++sends}` : undefined);
    }
    const perRecipient = new Map<string, number>();
    const runId = event.kind === 'schedule' ? event.schedule.run_id : inboxKey;
    return (recipient) => {
      const n = (perRecipient.get(recipient) ?? 0) + 1;
      perRecipient.set(recipient, n);
      return `snd_sch${runId}_${createHash('sha256').update(recipient).digest('hex').slice(0, 12)}_${n}`;
    };
  }

  /** A schedule run's outcome, written to its run; a message's is in the bot log only. */
  private async ended(event: BotEvent, end: { outcome: RunOutcome; durationMs?: number; error?: string; location?: { file: string; line: number; column: number } }): Promise<void> {
    if (event.kind !== 'schedule') return;
    await runEnded(this.deps!.db.sql, event.schedule.run_id, this.deps!.clock.now(), end).catch((e) => {
      this.deps?.logger.warn(`bot runtime: a schedule run's outcome was not recorded: ${e instanceof Error ? e.message : String(e)}`);
    });
  }

  private async heldByPerson(projectId: string, conversationId: number): Promise<boolean> {
    const rows = await queryRows<{ state: string }>(this.deps!.db.sql, 'SELECT state FROM conversations WHERE project_id = $1 AND id = $2::bigint', projectId, String(conversationId));
    return rows[0]?.state === HUMAN_STATE;
  }

  /**
   * Runs the bot on one event: `done` when it is handled (it leaves the inbox), `left` when it
   * stays in the inbox for a reclaim pass, `again` when it runs again here (it was not at fault).
   */
  private async handle(projectId: string, inboxKey: string, event: BotEvent, reruns: number): Promise<'done' | 'left' | 'again'> {
    const deps = this.deps!;
    const label = labelOf(event);
    // A message rebuilt from the inbox (after a restart) has lost its consent mark: judged again
    // from its content and the project's keywords, so the bot still sees STOP as such.
    if (event.kind === 'message' && event.message.consent === undefined) {
      event.message.consent = await consentMarkOf(deps.db.sql, projectId, event.message.type, event.message.raw).catch(() => null);
    }
    // A conversation a person holds (state `handover`, the dashboard's take-over) is not the bot's:
    // its messages are stored and raised as events, the bot is not handed them. Read as it is now.
    const conversationId = event.kind === 'message' ? event.message.conversation.id : event.kind === 'call' ? event.call.conversation.id : undefined;
    if (conversationId !== undefined && (await this.heldByPerson(projectId, conversationId))) {
      await this.log(projectId, { level: 'info', kind: 'log', message: `${label} was not handed to the bot: a person holds conversation ${conversationId} (state handover).` });
      return 'done';
    }
    const slot = await this.sandboxWithRetry(projectId);
    if (!slot || slot.broken) {
      await this.ended(event, { outcome: 'skipped', error: !slot ? 'The project has no active release, or is not active.' : 'The bot could not start (see the bot log).' });
      return 'done';
    }
    let outcome: Outcome;
    let pooled: Pooled | undefined;
    try {
      pooled = await this.takeSandbox(projectId, slot);
    } catch (e) {
      if (e instanceof SandboxBusy) {
        // Not this event's doing: it waits in the inbox, uncounted.
        await this.log(projectId, { level: 'warn', kind: 'error', message: `${label} waits: ${e.message} It is handed to the bot again later.` });
        return 'left';
      }
      pooled = undefined;
      // Its process ended while it started: charged only when no other start-up or event was in flight there.
      outcome = { status: 'crashed', message: e instanceof Error ? e.message : String(e), durationMs: 0, bystanders: e instanceof SandboxCrashed ? e.bystanders : 0, withOtherProjects: e instanceof SandboxCrashed && e.withOtherProjects };
    }
    if (!pooled && slot.broken) {
      await this.ended(event, { outcome: 'skipped', error: 'The bot could not start (see the bot log).' });
      return 'done';
    }
    // Recorded before it runs, so that a run its process does not survive is counted (reclaim).
    const started = await markRunStarted(deps.db.sql, inboxKey, this.held.get(inboxKey) ?? 0, deps.clock.now());
    if (!started) {
      if (pooled) this.giveBack(projectId, slot, pooled);
      return 'left';
    }
    deps.metrics?.botRun(event.kind);
    if (event.kind === 'schedule') await runStarted(deps.db.sql, event.schedule.run_id, deps.clock.now(), slot.deploymentId);
    if (pooled) {
      const inv: Invocation = {
        projectId,
        mode: 'production',
        deploymentId: slot.deploymentId,
        logLines: 0,
        sendRef: this.sendRefs(inboxKey, event),
        ...(conversationId !== undefined ? { conversationId } : {}),
        journal: new EventJournal(deps.db.sql, projectId, inboxKey, started.ranBefore, () => deps.clock.now()),
      };
      pooled.inv = inv;
      slot.running++;
      try {
        const payload: InboundEvent = event.kind === 'message' ? { type: 'message', message: event.message }
          : event.kind === 'call' ? { type: 'call', call: event.call, context: event.context }
          : { type: 'schedule', schedule: event.schedule };
        outcome = await pooled.sandbox.dispatch(JSON.stringify(payload));
      } finally {
        slot.running--;
        this.giveBack(projectId, slot, pooled);
      }
    }
    outcome = outcome!;
    // Not this event's fault: stopped for an earlier event's leftover work, or its process ended
    // under several events at once (which one ended it is not known: the project then runs one
    // event at a time, so the culprit is charged alone). It runs again, uncounted; its journal
    // answers what it had done. When other projects' events were in that process too (a shared
    // one), each project moves out as a suspect (the supervisor) and is not held to one event at a
    // time: a neighbour of a crashing project would otherwise answer one customer at a time for a
    // minute. A culprit then ends its own process, under its own events only, and goes solo there.
    const bystander = (outcome.status === 'crashed' || outcome.status === 'memory_limit') && (outcome.bystanders ?? 0) > 0;
    if (bystander && !('withOtherProjects' in outcome && outcome.withOtherProjects)) this.solo.set(projectId, performance.now() + SOLO_MS);
    if (outcome.status === 'interrupted' || bystander) {
      if (reruns < MAX_RERUNS && !this.closed) return 'again';
      return 'left';
    }
    if (outcome.status === 'ok') {
      await this.ended(event, { outcome: 'ok', durationMs: outcome.durationMs });
      return 'done';
    }
    const location = 'location' in outcome ? outcome.location : undefined;
    const where = location ? ` at ${location.file}:${location.line}:${location.column}` : '';
    const kind = outcome.status === 'crashed' ? 'crash' : outcome.status;
    // Its isolates keep meeting their memory limit: its neighbours' process should not hold them.
    if (outcome.status === 'memory_limit') sandboxSupervisor().noteMemoryLimit(projectId);
    // An event stopped at a limit (time, memory, its process's end): its project's own process runs lower.
    if (outcome.status === 'timeout' || outcome.status === 'memory_limit' || outcome.status === 'crashed') sandboxSupervisor().noteOverLimit(projectId);
    // Counted for the operator (bot_event_failures_total) besides the bot log entry below.
    deps.metrics?.botFailure(projectId, kind);
    if (outcome.status === 'error') {
      await this.log(projectId, { level: 'error', kind, message: `${outcome.message}${where} (${label})`, deploymentId: slot.deploymentId });
      await this.ended(event, { outcome: 'error', durationMs: outcome.durationMs, error: outcome.message, location });
      return 'done';
    }
    // Abnormal, and this event's own (it ran alone, or its own isolate's limit): tried again by a
    // reclaim pass, or set aside at the limit.
    const max = deps.config.botMaxAbnormalRuns;
    const counted = await recordAbnormalRun(deps.db.sql, inboxKey, `${outcome.message}${where}`, deps.clock.now(), max);
    const next = !counted ? '' : counted.setAside
      ? ` It was set aside after ${counted.runs} abnormal runs and will not be handed to the bot again.`
      : ` It will be tried again (abnormal run ${counted.runs} of ${max}).`;
    await this.log(projectId, { level: 'error', kind: counted?.setAside ? 'set_aside' : kind, message: `${outcome.message}${where} (${label}).${next}`, deploymentId: slot.deploymentId });
    await this.ended(event, { outcome: counted?.setAside ? 'set_aside' : (outcome.status as RunOutcome), durationMs: outcome.durationMs, error: `${outcome.message}${next}`, location });
    return 'left';
  }
}

/** How the bot log names an event. */

function labelOf(event: BotEvent): string {
  if (event.kind === 'call') return `call ${event.call.id} (${event.call.status})`;
  return event.kind === 'message' ? `message ${event.message.id}` : `schedule "${event.schedule.name}" run ${event.schedule.run_id}`;
}
