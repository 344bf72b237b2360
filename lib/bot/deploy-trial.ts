/**
 * A deploy's trial run: before production switches, the new bundle handles one sample message in
 * preview (lib/bot/preview.ts: a throwaway sandbox, the production limits, nothing leaves), so a
 * bundle that would fail every customer is refused instead of promoted (lib/deploy/deployments.ts).
 *
 * Policy and why:
 * - The sample is the author's own (`sample` of the deploy request: a text, and optionally the
 *   sender and the conversation's state), or DEFAULT_SAMPLE ("Hello").
 * - Any run that does not end well refuses the deploy: a throw, the event's time or memory limit,
 *   the end of its sandbox's process. The diagnostic points at the author's file and line (the
 *   sandbox maps the error through the bundle's source map), with `source: 'sample'`.
 * - Not refused: a throw after a table helper found that the preview schema lacks a table
 *   production has (`table_not_found`, "exists in production (public) only"): the sample run
 *   writes the preview schema, as a preview does, and cannot tell; production has the table.
 * - `force` on the deploy skips the trial: the author knows the sample fails (e.g. the bot needs a
 *   backend the sample cannot reach).
 * - The project's secret values never reach the diagnostic (redacted as in a preview).
 */
import type { BotDeps } from './helpers.js';
import type { Diagnostic } from '../deploy/diagnostic.js';
import { ENTRY } from '../deploy/build.js';
import { DEFAULT_LIMITS, StartupError } from '../sandbox/sandbox.js';
import { runOnceInPreview, simulatedMessage, type PreviewInput } from './preview.js';
import { redactorFor } from './secrets.js';
import { PUBLIC_ONLY } from './preview-tables.js';

export const DEFAULT_SAMPLE: PreviewInput = { text: 'Hello' };

const WHAT: Record<string, string> = {
  error: 'threw',
  timeout: 'ran past its time limit',
  memory_limit: 'ran past its memory limit',
  crashed: 'ended its sandbox process',
  interrupted: 'was interrupted',
};

/** The trial a deploy runs on its new bundle: no diagnostics when the sample is handled. */
export function sampleTrial(deps: BotDeps, projectId: string, sample: PreviewInput = DEFAULT_SAMPLE) {
  return async (bundle: string, sourceMap: string): Promise<Diagnostic[]> => {
    const message = await simulatedMessage(deps, projectId, sample, deps.clock.now());
    const limits = deps.bot?.limits ?? DEFAULT_LIMITS;
    // A table production has and the preview schema lacks fails the sample, not production.
    let previewOnly = false;
    const observe = (_op: unknown, answer: string) => {
      if (answer.includes('"table_not_found"') && answer.includes(PUBLIC_ONLY)) previewOnly = true;
    };
    let outcome;
    try {
      ({ outcome } = await runOnceInPreview(deps, projectId, bundle, sourceMap, message, limits, observe));
    } catch (e) {
      if (!(e instanceof StartupError)) throw e;
      outcome = { status: 'error' as const, message: e.message, location: e.location, durationMs: 0 };
    }
    if (outcome.status === 'ok' || (outcome.status === 'error' && previewOnly)) return [];
    const redact = await redactorFor(deps, projectId);
    const at = 'location' in outcome ? outcome.location : undefined;
    return [{
      file: at?.file ?? ENTRY,
      line: at?.line ?? 1,
      column: at?.column ?? 1,
      message: redact(`The bot ${WHAT[outcome.status] ?? outcome.status} on the sample message ${JSON.stringify(sample.text.slice(0, 100))}: ${outcome.message}`),
      source: 'sample',
    }];
  };
}
