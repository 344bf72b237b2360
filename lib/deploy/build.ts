/**
 * Building a code tree: esbuild bundles `src/main.ts` and what it imports from the tree
 * (lib/deploy/bundle.ts), and the TypeScript compiler type-checks every `.ts` file
 * (lib/deploy/typecheck-tree.ts); the bundle is answered only when both pass. Diagnostics always
 * name a file of the tree with a 1-based line and column, never the bundle.
 *
 * Policy and why (issue 66: no tenant's work runs on the service's time):
 * - Builds run in a build process of their own (lib/deploy/build-process.ts), never in the
 *   service's: every thread of it, and esbuild's process under it, at nice 10 (BUILD_NICE), so the
 *   service's requests, its bots' events and its database pool come first on the machine's cores.
 * - A build is the project's work: the CPU it spent (the build process's and esbuild's, from /proc)
 *   is told to the listener set by configureBuilds (`onCpu`), which the bot runtime charges to the
 *   project's CPU budget (lib/bot/cpu-budget.ts). A build without a project (tests, the bench) is
 *   charged to nobody.
 * - One build at a time (BUILD_CONCURRENCY): a build is CPU-bound, so two at once would finish no
 *   sooner on a small machine, would take a second core from the service, and would make the CPU
 *   of the process no longer one build's own to charge.
 * - Served in turn per project (lib/deploy/build-queue.ts): a project's builds wait in its own
 *   queue and the projects take turns; at most MAX_WAITING_BUILDS wait per project, past it the
 *   build is refused with 429 `rate_limited` and a Retry-After (deploys and previews alike).
 * - Bounded in time: a build not done in BUILD_TIMEOUT_MS is stopped (its process killed and
 *   replaced) and fails with a diagnostic, as does a build whose process ends under it.
 */
import { ApiError } from '../platform/errors.js';
import { BuildProcess, type BuildProcessKeeper } from './build-process.js';
import { BuildQueue, QueueFull } from './build-queue.js';
import { ENTRY, type BuildResult } from './build-protocol.js';

export { ENTRY, BUILD_NICE, type BuildResult } from './build-protocol.js';
export type { Diagnostic } from './diagnostic.js';

export const BUILD_CONCURRENCY = 1;
export const MAX_WAITING_BUILDS = 2;
export const BUILD_TIMEOUT_MS = 60_000;

let onCpu: ((projectId: string, ms: number) => void) | undefined;
let timeoutMs = BUILD_TIMEOUT_MS;
let builder: BuildProcess | undefined;
const queue = new BuildQueue({ concurrency: BUILD_CONCURRENCY, maxWaitingPerProject: MAX_WAITING_BUILDS });
/** A build's usual length (moving average, ms): the Retry-After of a refusal. */
let usualMs = 2000;

/**
 * Sets who is told each build's CPU (the bot runtime: the project's CPU budget), the time bound
 * (tests), and where a stopped build process is kept warm (tests' workers: lib/deploy/build-process.ts).
 */
export function configureBuilds(options: { onCpu?: (projectId: string, ms: number) => void; timeoutMs?: number; keeper?: BuildProcessKeeper }): void {
  if (options.onCpu) onCpu = options.onCpu;
  if (options.timeoutMs !== undefined) timeoutMs = options.timeoutMs;
  if (options.keeper) buildProcess().keeper = options.keeper;
}

function buildProcess(): BuildProcess {
  builder ??= new BuildProcess();
  return builder;
}

/** Bundles and type-checks in the build process, in the project's turn. */
export async function buildTree(files: Map<string, string>, opts: { projectId?: string } = {}): Promise<BuildResult> {
  if (!files.has(ENTRY)) {
    return { ok: false, diagnostics: [{ file: ENTRY, line: 1, column: 1, message: `The entry point ${ENTRY} is missing.`, source: 'bundle' }] };
  }
  const { projectId } = opts;
  try {
    return await queue.run(projectId ?? '', async () => {
      const started = performance.now();
      const { result, cpuMs } = await buildProcess().build(files, timeoutMs);
      usualMs = 0.8 * usualMs + 0.2 * (performance.now() - started);
      if (projectId && cpuMs > 0) onCpu?.(projectId, cpuMs);
      return result;
    }, projectId !== undefined);
  } catch (e) {
    if (!(e instanceof QueueFull)) throw e;
    const retry = Math.max(1, Math.ceil((usualMs * e.turnsAhead) / 1000));
    throw new ApiError(
      'rate_limited',
      `This project already has ${e.limit} builds waiting (deploys and previews are built one at a time, projects in turn); try again in ${retry} seconds.`,
      { budget: 'builds', limit: e.limit },
      { 'Retry-After': String(retry) },
    );
  }
}

/** The build process's id (tests) and the builds running and waiting. */
export function buildsState(): { pid: number | undefined; running: number; waiting: Record<string, number> } {
  return { pid: builder?.pid, ...queue.state };
}

/** Stops the build process (shutdown, tests); a later build starts a new one. */
export async function stopBuilds(): Promise<void> {
  await builder?.stop();
}
