/**
 * Generating and updating flows: the use cases behind POST /v1/flows/generate and
 * PUT /v1/flows/{name}.
 *
 * Policy:
 * - Every definition, whoever wrote it, goes through the validator before it is stored; what is
 *   stored is the definition's two-space rendering, so hashes, ETags and finding positions refer
 *   to one text.
 * - A generator's invalid result is given back to it once with the findings; a second invalid
 *   result, a timeout or an answer that is not a completion is 502 (`flow_generation_failed` or
 *   `flow_update_failed`) with `details.reason` and `details.findings`. Nothing is stored then.
 * - A definition the caller sent that has errors is the caller's mistake: 400 `invalid_flow` with
 *   the findings (positions in the caller's text when sent as text).
 */
import type { components } from '../../generated/api.js';
import type { Deps } from '../deps.js';
import { ApiError, type ErrorCode } from '../platform/errors.js';
import { checkDescription, deterministicGenerator, GeneratorError, type FlowGenerator, type GenerateRequest } from './generator.js';
import { modelGenerator } from './model-generator.js';
import { findFlow, findVersion, flowView, writeFlowVersion, type FlowSource, type FlowVersionRow, type FlowRow } from './store.js';
import { DEFAULT_FLOW_VERSION, renderFlow, validateFlowJson, type FlowFinding } from './validator/index.js';

type GenerateFlowRequest = components['schemas']['GenerateFlowRequest'];
type UpdateFlowRequest = components['schemas']['UpdateFlowRequest'];
export type FlowWithDefinition = components['schemas']['FlowWithDefinition'];

export interface FlowResult {
  flow: FlowWithDefinition;
  etag: string;
  created: boolean;
  unchanged: boolean;
  generator?: 'deterministic' | 'model';
  attempts?: number;
}

export function withDefinition(row: FlowRow, v: FlowVersionRow): FlowWithDefinition {
  return { ...flowView(row, v), definition: JSON.parse(v.definition) as Record<string, unknown> };
}

/** Errors first, then warnings; at most 200 (details stay readable). */
function sorted(findings: FlowFinding[]): FlowFinding[] {
  return [...findings].sort((a, b) => (a.severity === b.severity ? 0 : a.severity === 'error' ? -1 : 1)).slice(0, 200);
}

function fieldsError(fields: { field: string; message: string }[]): ApiError {
  return new ApiError('invalid_request', fields[0].message, { fields });
}

/** Runs a generator with one corrective retry; returns the valid canonical text and its findings. */
async function runGenerator(gen: FlowGenerator, req: GenerateRequest, failure: ErrorCode): Promise<{ text: string; findings: FlowFinding[]; attempts: number }> {
  let previous: GenerateRequest['previous'];
  let last: FlowFinding[] = [];
  for (let attempt = 1; attempt <= 2; attempt++) {
    let output: string | unknown;
    try {
      output = await gen.generate(previous ? { ...req, previous } : req);
    } catch (e) {
      if (e instanceof GeneratorError) {
        throw new ApiError(failure, `${e.message} No flow was stored.`, { reason: e.reason, attempts: attempt, findings: last });
      }
      throw e;
    }
    const r = validateFlowJson(output);
    if (r.valid) {
      // A value was validated in its canonical rendering already; text is re-rendered.
      if (typeof output !== 'string') return { text: r.text, findings: r.findings, attempts: attempt };
      const text = renderFlow(r.flow);
      return { text, findings: text === r.text ? r.findings : validateFlowJson(text).findings, attempts: attempt };
    }
    last = sorted(r.findings);
    previous = { output: r.text, findings: r.findings };
  }
  const errors = last.filter((f) => f.severity === 'error');
  throw new ApiError(
    failure,
    `The ${gen.kind} generator's flow is still invalid after a corrective attempt (${errors.length} error${errors.length === 1 ? '' : 's'}, first: ${errors[0]?.message ?? 'none'}). No flow was stored.`,
    { reason: 'invalid_flow', attempts: 2, findings: last },
  );
}

function needModel(deps: Deps, what: string): FlowGenerator {
  const gen = modelGenerator(deps.config);
  if (!gen) {
    throw new ApiError('invalid_request', `${what} needs the language-model generator, which is not configured (FLOW_MODEL_URL). Send a structured description or a definition instead.`);
  }
  return gen;
}

export async function generateFlow(deps: Deps, projectId: string, body: GenerateFlowRequest): Promise<FlowResult> {
  const version = body.version ?? DEFAULT_FLOW_VERSION;
  if ((body.description === undefined) === (body.prompt === undefined)) {
    throw fieldsError([{ field: 'description', message: 'Give exactly one of `description` (structured) or `prompt` (words).' }]);
  }
  let gen: FlowGenerator;
  if (body.description) {
    const problems = checkDescription(body.description, version);
    if (problems.length) throw fieldsError(problems);
    gen = deterministicGenerator;
  } else {
    gen = needModel(deps, 'A `prompt`');
    // Refuse a taken name before spending a model call (the write checks again, under its lock).
    const exists = await deps.db.prisma.flow.findUnique({ where: { projectId_name: { projectId, name: body.name } }, select: { id: true } });
    if (exists) throw new ApiError('conflict', `A flow named "${body.name}" exists already: update it with PUT /v1/flows/${body.name}.`);
  }
  const out = await runGenerator(gen, { name: body.name, version, description: body.description, prompt: body.prompt }, 'flow_generation_failed');
  const source: FlowSource = gen.kind === 'model' ? 'model_generate' : 'generate';
  const w = await writeFlowVersion(deps, projectId, body.name, { text: out.text, findings: out.findings, source, categories: body.categories, createOnly: true });
  return { flow: withDefinition(w.flow, w.version), etag: `"${w.version.sha256}"`, created: true, unchanged: false, generator: gen.kind, attempts: out.attempts };
}

export async function updateFlow(deps: Deps, projectId: string, name: string, body: UpdateFlowRequest, ifMatch: string | undefined): Promise<FlowResult> {
  if ((body.definition === undefined) === (body.instruction === undefined)) {
    throw fieldsError([{ field: 'definition', message: 'Give exactly one of `definition` (the new Flow JSON) or `instruction` (the change in words).' }]);
  }
  let text: string;
  let findings: FlowFinding[];
  let source: FlowSource = 'update';
  let generator: 'model' | undefined;
  let attempts: number | undefined;
  if (body.definition !== undefined) {
    const r = validateFlowJson(body.definition);
    if (!r.valid) {
      const list = sorted(r.findings);
      const errors = list.filter((f) => f.severity === 'error');
      throw new ApiError('invalid_flow', `The definition has ${errors.length} error${errors.length === 1 ? '' : 's'}; first: ${errors[0].message}`, { findings: list });
    }
    text = typeof body.definition === 'string' ? renderFlow(r.flow) : r.text;
    findings = text === r.text ? r.findings : validateFlowJson(text).findings;
  } else {
    const gen = needModel(deps, 'An `instruction`');
    const flow = await findFlow(deps, projectId, name);
    const current = await findVersion(deps, flow);
    // A stale base is refused before the model is asked (the write checks again under its lock).
    if (ifMatch !== undefined && !ifMatch.split(',').some((t) => ['*', `"${current.sha256}"`].includes(t.trim().replace(/^W\//, '')))) {
      throw new ApiError('precondition_failed', 'The flow changed since that ETag: read it again and reapply the change.', { current_etag: `"${current.sha256}"` }, { ETag: `"${current.sha256}"` });
    }
    const parsed = JSON.parse(current.definition) as { version?: unknown };
    const version = typeof parsed.version === 'string' ? parsed.version : DEFAULT_FLOW_VERSION;
    const out = await runGenerator(gen, { name, version, current: current.definition, instruction: body.instruction }, 'flow_update_failed');
    ({ text, findings } = out);
    source = 'model_update';
    generator = 'model';
    attempts = out.attempts;
  }
  const w = await writeFlowVersion(deps, projectId, name, { text, findings, source, categories: body.categories, ifMatch });
  return {
    flow: withDefinition(w.flow, w.version),
    etag: `"${w.version.sha256}"`,
    created: w.created,
    unchanged: w.unchanged,
    ...(generator ? { generator, attempts } : {}),
  };
}
