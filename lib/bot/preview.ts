/**
 * POST /v1/bot/preview: the development tree, built like a deploy, handles one simulated inbound
 * text in a throwaway sandbox with the production limits. Nothing reaches a customer or a webhook:
 * sends, state changes, events and logs are captured; the table helpers use the `preview` schema;
 * `secrets.get` reads the project's secrets except production-only ones, and `http.fetch` calls out
 * as in production (each operation's `preview` in lib/bot/host-api.ts). No secret value reaches the
 * answer: every one is redacted (lib/bot/secrets.ts). A text that is one of the project's consent
 * keywords arrives marked (`message.consent`) as in production; no consent changes.
 *
 * A deploy runs its new bundle once the same way on a sample message (lib/bot/deploy-trial.ts).
 */
import type { BotDeps } from './helpers.js';
import { ensureTree, readTree } from '../code/store.js';
import { buildArtifact, buildFailed } from '../deploy/deployments.js';
import { ApiError } from '../platform/errors.js';
import { DEFAULT_LIMITS, MOVED_MESSAGE, StartupError, type Outcome, type SandboxLimits } from '../sandbox/sandbox.js';
import { SandboxBusy, SandboxCrashed, sandboxSupervisor, type BotSandbox } from '../sandbox/supervisor.js';
import { consentMarkOf } from '../consent/keywords.js';
import { runHelper, type Capture, type Invocation } from './helpers.js';
import type { CallContext } from './host-types.js';
import { hostOpBounds } from './host-api.js';
import { redactDeep, redactorFor } from './secrets.js';
import type { BotInboundMessage } from './types.js';
import type { InboundEvent } from './event-types.js';

export interface PreviewInput {
  text: string;
  from?: string;
  state?: string;
}

/** The simulated inbound text a preview or a deploy's sample run hands the bot. */
export async function simulatedMessage(deps: BotDeps, projectId: string, input: PreviewInput, now: Date): Promise<BotInboundMessage> {
  const from = input.from ?? '15550000000';
  const raw = { type: 'text', text: { body: input.text } };
  return {
    id: `wamid.preview.${now.getTime()}`,
    from,
    type: 'text',
    text: input.text,
    raw,
    conversation: { id: 1, state: input.state ?? 'unstructured' },
    contact: { phone: from, name: null },
    received_at: now.toISOString(),
    consent: await consentMarkOf(deps.db.sql, projectId, 'text', raw),
  };
}

/**
 * Runs a built bundle once on `message` in a throwaway sandbox with preview rights (nothing
 * leaves). Start-up failures are thrown (StartupError); a crash of its process while starting is
 * the run's `crashed` outcome.
 */
export async function runOnceInPreview(
  deps: BotDeps, projectId: string, bundle: string, sourceMap: string, message: BotInboundMessage, limits: SandboxLimits,
  /** Told each helper call's answer (JSON text), e.g. to tell a preview-only failure apart. */
  observe?: (op: unknown, answer: string) => void,
): Promise<{ outcome: Outcome; capture: Capture }> {
  for (let attempt = 1; ; attempt++) {
    const run = await runOnce(deps, projectId, bundle, sourceMap, message, limits, observe);
    // Its project was moved to a process of its own meanwhile (past its CPU burst): run again there, from the start.
    if (run.outcome.status === 'interrupted' && run.outcome.message === MOVED_MESSAGE && attempt < 2) continue;
    return run;
  }
}

async function runOnce(
  deps: BotDeps, projectId: string, bundle: string, sourceMap: string, message: BotInboundMessage, limits: SandboxLimits,
  observe?: (op: unknown, answer: string) => void,
): Promise<{ outcome: Outcome; capture: Capture }> {
  const capture: Capture = { sends: [], state: null, events: [], logs: [] };
  const inv: Invocation = { projectId, mode: 'preview', capture, logLines: 0 };
  const helper = async (op: unknown, args: unknown, call?: CallContext) => {
    const answer = await runHelper(deps, inv, op, args, call);
    observe?.(op, answer);
    return answer;
  };
  let sandbox: BotSandbox;
  try {
    sandbox = await sandboxSupervisor().create(projectId, bundle, sourceMap, helper, limits, { ops: hostOpBounds() });
  } catch (e) {
    // Its process ended while it started (this bot's start-up, or another's event).
    if (e instanceof SandboxCrashed || e instanceof SandboxBusy) return { outcome: { status: 'crashed', message: e.message, durationMs: 0 }, capture };
    throw e;
  }
  try {
    const event: InboundEvent = { type: 'message', message };
    return { outcome: await sandbox.dispatch(JSON.stringify(event)), capture };
  } finally {
    sandbox.dispose();
  }
}

export async function previewBot(deps: BotDeps, projectId: string, input: PreviewInput, limits: SandboxLimits = deps.bot?.limits ?? DEFAULT_LIMITS) {
  const now = deps.clock.now();
  // A preview spends the project's CPU budget as its events do (lib/bot/cpu-budget.ts): past it, refused.
  const cpuUntil = await deps.bot?.cpuExhausted?.(projectId);
  if (cpuUntil) {
    const retry = Math.max(1, Math.ceil((cpuUntil.getTime() - now.getTime()) / 1000));
    throw new ApiError('rate_limited', `The project's bots used their CPU budget of ${deps.config.botCpuMsPerMinute} ms this minute (BOT_CPU_MS_PER_MINUTE); preview again in ${retry} seconds.`, { budget: 'bot_cpu', limit: deps.config.botCpuMsPerMinute }, { 'Retry-After': String(retry) });
  }
  await ensureTree(deps.db, projectId, now);
  const files = await readTree(deps.db.sql, projectId, 'development');
  const built = await buildArtifact(files, { projectId });
  if (!built.ok) throw buildFailed(built.diagnostics);
  const message = await simulatedMessage(deps, projectId, input, now);
  let run: { outcome: Outcome; capture: Capture };
  try {
    run = await runOnceInPreview(deps, projectId, built.bundle, built.sourceMap, message, limits);
  } catch (e) {
    if (!(e instanceof StartupError)) throw e;
    throw buildFailed([{ file: e.location?.file ?? 'src/main.ts', line: e.location?.line ?? 1, column: e.location?.column ?? 1, message: e.message, source: 'startup' }]);
  }
  const { outcome, capture } = run;
  const where = 'location' in outcome && outcome.location ? ` at ${outcome.location.file}:${outcome.location.line}:${outcome.location.column}` : '';
  // No secret value reaches the preview's answer, whatever the bot did with it.
  return redactDeep({
    // A preview's sandbox is new and serves this event alone: nothing of another event can interrupt it.
    // A crash of the sandbox's process is the bot's error here (the service kept running).
    outcome: { status: outcome.status === 'interrupted' ? 'timeout' : outcome.status === 'crashed' ? 'error' : outcome.status, message: outcome.status === 'ok' ? null : `${outcome.message}${where}`, duration_ms: outcome.durationMs },
    sends: capture.sends as Record<string, unknown>[],
    state: capture.state,
    events: capture.events,
    logs: capture.logs,
  }, await redactorFor(deps, projectId));
}
