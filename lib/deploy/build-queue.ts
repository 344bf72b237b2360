/**
 * The builds' queue: per project, served in turn.
 *
 * Policy and why:
 * - Each project has its own first-come queue; when a slot frees, the project served least
 *   recently goes next (round-robin across projects, not first-come across all): a project that
 *   floods the queue gets one build per round, and another project's single build waits for at most
 *   the build running and one build of each other waiting project.
 * - At most `concurrency` builds run at once (lib/deploy/build.ts says why one).
 * - A project holds at most `maxWaitingPerProject` builds waiting (besides the one running); past
 *   it the build is refused at once (QueueFull), so one project cannot make the others' wait grow.
 */

/** The project already has its bound of builds waiting. `turnsAhead`: builds likely to start before its next one. */
export class QueueFull extends Error {
  constructor(readonly limit: number, readonly turnsAhead: number) {
    super(`already ${limit} builds waiting`);
    this.name = 'QueueFull';
  }
}

interface Job {
  seq: number;
  start: () => void;
}

interface ProjectQueue {
  waiting: Job[];
  running: number;
  /** When it was last served (a serve counter), 0 when never: the least recent goes next. */
  lastServed: number;
}

export class BuildQueue {
  private readonly projects = new Map<string, ProjectQueue>();
  private running = 0;
  private seq = 0;
  private served = 0;

  constructor(private readonly options: { concurrency: number; maxWaitingPerProject: number }) {}

  /**
   * Runs `work` in the project's turn. Throws QueueFull at once when `bounded` and the project
   * already has its bound of builds waiting.
   */
  run<T>(project: string, work: () => Promise<T>, bounded = true): Promise<T> {
    let p = this.projects.get(project);
    if (!p) this.projects.set(project, (p = { waiting: [], running: 0, lastServed: 0 }));
    const q = p;
    if (bounded && q.waiting.length >= this.options.maxWaitingPerProject) {
      // Its next waiting build starts after the running ones and one of each other waiting project.
      const others = [...this.projects].filter(([key, o]) => key !== project && o.waiting.length > 0).length;
      throw new QueueFull(this.options.maxWaitingPerProject, this.running + others);
    }
    const promise = new Promise<T>((resolve, reject) => {
      q.waiting.push({
        seq: ++this.seq,
        start: () => {
          let running: Promise<T>;
          try {
            running = work();
          } catch (e) {
            running = Promise.reject(e);
          }
          running.then(resolve, reject).finally(() => {
            this.running--;
            q.running--;
            if (q.running === 0 && q.waiting.length === 0 && this.projects.get(project) === q) this.projects.delete(project);
            this.pump();
          });
        },
      });
    });
    this.pump();
    return promise;
  }

  private pump(): void {
    while (this.running < this.options.concurrency) {
      let next: ProjectQueue | undefined;
      for (const p of this.projects.values()) {
        if (!p.waiting.length) continue;
        if (!next || p.lastServed < next.lastServed || (p.lastServed === next.lastServed && p.waiting[0].seq < next.waiting[0].seq)) next = p;
      }
      if (!next) return;
      const job = next.waiting.shift()!;
      next.running++;
      next.lastServed = ++this.served;
      this.running++;
      job.start();
    }
  }

  /** Builds running and waiting (tests, metrics). */
  get state(): { running: number; waiting: Record<string, number> } {
    return { running: this.running, waiting: Object.fromEntries([...this.projects].filter(([, p]) => p.waiting.length).map(([k, p]) => [k, p.waiting.length])) };
  }
}
