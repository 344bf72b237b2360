/**
 * A project's bots (its events, schedule runs, previews and deploy checks: everything its sandbox
 * process runs) share a CPU budget per minute, counted in the shared counters so every instance
 * agrees (Redis when REDIS_URL is set; in-process otherwise).
 *
 * Policy and why:
 * - What is counted is the CPU of the project's sandbox process (all its threads, read from /proc
 *   while anything runs there: lib/sandbox/supervisor.ts), so start-ups, compiles and leftover
 *   work count as much as handlers do, and a loop is charged while it loops, not when it ends.
 * - Past BOT_CPU_BURST_MS in the minute, the project moves out of the shared sandbox processes to
 *   one of its own (lib/sandbox/supervisor.ts); past half of BOT_CPU_MS_PER_MINUTE that process
 *   runs at a lower priority (nice 10); past BOT_CPU_MS_PER_MINUTE at the lowest (nice 19), and its
 *   new events wait for the next minute. Every sandbox process runs below the service (nice 5 at
 *   least), and one whose project's events end at their limits at nice 10 at least (the supervisor) (lib/bot/runtime.ts, the bot log says so once a minute; a
 *   preview is answered that it waits). Events already running finish at the lowest priority: the
 *   bound is the budget plus what they spend (each at most its time limit), and none of it ahead of
 *   another project.
 * - Back within the budget (the minute turned), the priority is restored.
 * - When the counters cannot answer, the budget fails open (like the API's rate limits).
 */
import type { Deps } from '../deps.js';
import { DEDICATED_MS, type Priority, type SandboxSupervisor } from '../sandbox/supervisor.js';

export const CPU_WINDOW_MS = 60_000;
/** How often CPU told by the supervisor is added to the shared counters. */
const FLUSH_MS = 250;

type BudgetDeps = Pick<Deps, 'counters' | 'clock' | 'config' | 'logger'>;

const keyOf = (projectId: string) => `bot:cpu:${projectId}`;

export class CpuBudget {
  private readonly pending = new Map<string, number>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly deps: BudgetDeps, private readonly supervisor: Pick<SandboxSupervisor, 'setPriority' | 'dedicate'>) {}

  /** CPU the project's sandbox process spent (the supervisor's `onCpu`). */
  spent(projectId: string, ms: number): void {
    this.pending.set(projectId, (this.pending.get(projectId) ?? 0) + ms);
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_MS);
      this.timer.unref();
    }
  }

  /** Adds what was spent to the shared counters and sets each project's priority by its total. */
  async flush(): Promise<void> {
    this.timer = undefined;
    const batch = [...this.pending];
    this.pending.clear();
    await Promise.all(
      batch.map(async ([projectId, ms]) => {
        const whole = Math.floor(ms);
        if (ms > whole) this.pending.set(projectId, (this.pending.get(projectId) ?? 0) + ms - whole);
        const total = await this.hit(projectId, whole);
        if (total) this.shape(projectId, total.count);
      }),
    );
  }

  /** Before a project's event: undefined when within its budget, else when the minute ends. */
  async exhausted(projectId: string): Promise<Date | undefined> {
    const total = await this.hit(projectId, 0);
    if (!total) return undefined;
    this.shape(projectId, total.count);
    return total.count >= this.deps.config.botCpuMsPerMinute ? total.resetAt : undefined;
  }

  /** CPU spent by the project's bots this minute, in ms (tests, the bot log). */
  async spentThisMinute(projectId: string): Promise<number> {
    return (await this.hit(projectId, 0))?.count ?? 0;
  }

  /** The minute's count and when it ends (undefined when the counters cannot answer). */
  async state(projectId: string): Promise<{ count: number; resetAt: Date } | undefined> {
    return this.hit(projectId, 0);
  }

  /**
   * Past the burst, the project leaves the shared sandbox processes (its CPU no longer shares their
   * threads with other projects'); its own process runs below the others' past half its budget
   * (nice 10) and past its budget (nice 19): a busy but legitimate bot keeps its pace, a loop does not.
   */
  private shape(projectId: string, ms: number): void {
    if (ms >= this.deps.config.botCpuBurstMs) this.supervisor.dedicate(projectId, 'cpu', DEDICATED_MS);
    this.supervisor.setPriority(projectId, this.priorityOf(ms));
  }

  /**
   * A ladder, not a step: past the burst 5, past a quarter of the budget 10, past half 15, past the
   * budget 19. Why: with one step at half the budget (15 s of CPU a minute by default), four
   * projects looping on the CPU each ran at the service's priority for a quarter of a minute and
   * the service took 3.5 to 5.6 s to accept a notification (docs/benchmarks.md, issue 66, run 10).
   */
  private priorityOf(ms: number): Priority {
    const { botCpuMsPerMinute: budget, botCpuBurstMs: burst } = this.deps.config;
    if (ms >= budget) return 19;
    if (ms >= Math.max(burst, budget / 2)) return 15;
    if (ms >= Math.max(burst, budget / 4)) return 10;
    return ms >= burst ? 5 : 0;
  }

  private async hit(projectId: string, ms: number): Promise<{ count: number; resetAt: Date } | undefined> {
    try {
      return await this.deps.counters.hit(keyOf(projectId), CPU_WINDOW_MS, this.deps.clock.now(), ms);
    } catch (e) {
      this.deps.logger.warn('bot CPU budget: counters unavailable', { error: String(e) });
      return undefined;
    }
  }
}
