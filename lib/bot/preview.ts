/**
 * POST /v1/bot/preview: the development tree, built like a deploy, handles one simulated inbound
 * text in a throwaway sandbox with the production limits. Nothing reaches a customer or a webhook:
 * sends, state changes, events and logs are captured; the table helpers use the `preview` schema;
 * `secrets.get` reads the project's secrets except production-only ones, and `http.fetch` calls out
 * as in production (each operation's `preview` in lib/bot/host-api.ts). No secret value reaches the
 * answer: every one is redacted (lib/bot/secrets.ts).
 */
import type { BotDeps } from './helpers.js';
import { ensureTree, readTree } from '../code/store.js';
import { buildArtifact, buildFailed } from '../deploy/deployments.js';
import { DEFAULT_LIMITS, StartupError, type SandboxLimits } from '../sandbox/sandbox.js';
import { SandboxCrashed, sandboxSupervisor, type BotSandbox } from '../sandbox/supervisor.js';
import { runHelper, type Capture, type Invocation } from './helpers.js';
import { hostOpBounds } from './host-api.js';
import { redactDeep, redactorFor } from './secrets.js';
import type { BotInboundMessage } from './types.js';

export interface PreviewInput {
  text: string;
  from?: string;
  state?: string;
}

export async function previewBot(deps: BotDeps, projectId: string, input: PreviewInput, limits: SandboxLimits = deps.bot?.limits ?? DEFAULT_LIMITS) {
  const now = deps.clock.now();
  await ensureTree(deps.db.pool, projectId, now);
  const files = await readTree(deps.db.pool, projectId, 'development');
  const built = await buildArtifact(files);
  if (!built.ok) throw buildFailed(built.diagnostics);
  const capture: Capture = { sends: [], state: null, events: [], logs: [] };
  const inv: Invocation = { projectId, mode: 'preview', capture, logLines: 0 };
  const from = input.from ?? '15550000000';
  const message: BotInboundMessage = {
    id: `wamid.preview.${now.getTime()}`,
    from,
    type: 'text',
    text: input.text,
    raw: { type: 'text', text: { body: input.text } },
    conversation: { id: 1, state: input.state ?? 'unstructured' },
    contact: { phone: from, name: null },
    received_at: now.toISOString(),
  };
  let sandbox: BotSandbox;
  try {
    sandbox = await sandboxSupervisor().create(projectId, built.bundle, built.sourceMap, (op, args, call) => runHelper(deps, inv, op, args, call), limits, { ops: hostOpBounds() });
  } catch (e) {
    // Its process ended while it started (this bot's start-up, or another's event): the preview's error.
    if (e instanceof SandboxCrashed) return { outcome: { status: 'error' as const, message: e.message, duration_ms: 0 }, sends: [], state: null, events: [], logs: [] };
    if (!(e instanceof StartupError)) throw e;
    throw buildFailed([{ file: e.location?.file ?? 'src/main.ts', line: e.location?.line ?? 1, column: e.location?.column ?? 1, message: e.message, source: 'startup' }]);
  }
  try {
    const outcome = await sandbox.dispatch(JSON.stringify({ type: 'message', message }));
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
  } finally {
    sandbox.dispose();
  }
}
