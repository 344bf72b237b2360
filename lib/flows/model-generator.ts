/**
 * The language-model flow generator: an OpenAI-compatible chat-completions endpoint
 * (FLOW_MODEL_URL, FLOW_MODEL_NAME, FLOW_MODEL_API_KEY), used for flows and changes described in
 * words. It returns the model's text; the caller validates it and, when invalid, calls once more
 * with the findings (`previous`). Timeouts, refused connections, non-2xx answers and answers
 * without content are GeneratorErrors; content that is not a flow is the validator's business.
 *
 * The endpoint is the operator's own configuration (not a caller's URL), so it may be on a
 * private address.
 */
import type { Config } from '../platform/config.js';
import { GeneratorError, type FlowGenerator, type GenerateRequest } from './generator.js';
import { ACTIVE_VERSIONS } from './validator/index.js';

const SYSTEM = [
  'You write WhatsApp Flow JSON (Meta\'s Flow JSON reference). Answer with one JSON object only: the complete Flow JSON, no prose, no code fence.',
  `Use "version" as asked (supported: ${ACTIVE_VERSIONS.join(', ')}); layout type "SingleColumnLayout"; screen ids of capital letters and underscores only ("SUCCESS" is reserved).`,
  'At least one screen has "terminal": true and a Footer whose on-click-action is "complete"; only terminal screens complete.',
  'A navigate action\'s payload gives every field the target screen declares in "data"; each declared data field has "type" and "__example__".',
  'Property names are dashed ("on-click-action", "data-source"); no empty strings; at most 50 components per screen.',
].join('\n');

function userMessage(req: GenerateRequest): string {
  const parts: string[] = [`Flow JSON version: ${req.version}. Flow name: ${req.name}.`];
  if (req.current !== undefined) {
    parts.push(`Current Flow JSON:\n${req.current}`, `Apply this change and return the whole new Flow JSON:\n${req.instruction ?? ''}`);
  } else if (req.prompt !== undefined) {
    parts.push(`Build this flow:\n${req.prompt}`);
  } else if (req.description !== undefined) {
    parts.push(`Build this flow (structured description):\n${JSON.stringify(req.description)}`);
  }
  if (req.previous) {
    const list = req.previous.findings
      .filter((f) => f.severity === 'error')
      .slice(0, 50)
      .map((f) => `- ${f.error} at ${f.pointer || '/'}: ${f.message}`)
      .join('\n');
    parts.push(`Your previous answer was not valid:\n${req.previous.output.slice(0, 200_000)}\n\nFix these findings and answer with the corrected Flow JSON only:\n${list}`);
  }
  return parts.join('\n\n');
}

/** The first JSON object in a model answer (a code fence around it is tolerated). */
export function extractJson(content: string): string {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(content);
  const text = (fenced ? fenced[1] : content).trim();
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  return start >= 0 && end > start ? text.slice(start, end + 1) : text;
}

export function modelGenerator(config: Pick<Config, 'flowModelUrl' | 'flowModelName' | 'flowModelApiKey' | 'flowModelTimeoutMs'>): FlowGenerator | undefined {
  const url = config.flowModelUrl;
  if (!url) return undefined;
  const timeoutMs = config.flowModelTimeoutMs ?? 30000;
  return {
    kind: 'model',
    async generate(req) {
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), timeoutMs);
      let res: Response;
      let body: unknown;
      try {
        res = await fetch(`${url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(config.flowModelApiKey ? { authorization: `Bearer ${config.flowModelApiKey}` } : {}) },
          body: JSON.stringify({
            model: config.flowModelName ?? 'default',
            temperature: 0,
            response_format: { type: 'json_object' },
            messages: [
              { role: 'system', content: SYSTEM },
              { role: 'user', content: userMessage(req) },
            ],
          }),
          signal: ac.signal,
        });
        const text = await res.text();
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
      } catch (e) {
        if (ac.signal.aborted) throw new GeneratorError('timeout', `The flow model did not answer within ${timeoutMs} ms.`);
        throw new GeneratorError('unreachable', `The flow model could not be reached: ${(e as Error)?.message ?? String(e)}.`);
      } finally {
        clearTimeout(timer);
      }
      if (!res.ok) throw new GeneratorError('bad_response', `The flow model answered HTTP ${res.status}.`);
      const content = (body as { choices?: { message?: { content?: unknown } }[] } | undefined)?.choices?.[0]?.message?.content;
      if (typeof content !== 'string') throw new GeneratorError('bad_response', 'The flow model answered without a chat completion (choices[0].message.content).');
      return extractJson(content);
    },
  };
}
