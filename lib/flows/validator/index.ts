/**
 * The Flow JSON validator: pure TypeScript, no I/O. Meta publishes no JSON Schema and its own
 * upload accepts invalid flows and lists their errors only afterwards; this one says precisely
 * what is wrong, and where, before anything reaches the channel.
 *
 * Input is the Flow JSON text (positions then refer to it) or an already parsed value (then to
 * its two-space rendering, which is how the service stores definitions). The result is valid when
 * no finding has severity `error`.
 */
import { locate, positionOfOffset, syntaxErrorOffset } from './positions.js';
import { MAX_FLOW_BYTES } from './catalog.js';
import type { FlowFinding, RawFinding } from './findings.js';
import { checkFlow } from './rules.js';

export { RULES, type FlowFinding, type Rule, type Severity } from './findings.js';
export { DEFAULT_FLOW_VERSION, ACTIVE_VERSIONS, FROZEN_VERSIONS, MAX_FLOW_BYTES } from './catalog.js';

export interface ValidateOptions {
  /** Largest accepted Flow JSON in bytes (UTF-8). Default Meta's 10 MB. */
  maxBytes?: number;
}

export interface ValidationResult {
  valid: boolean;
  /** The text the positions refer to. */
  text: string;
  /** The parsed flow, when the text is JSON. */
  flow?: unknown;
  findings: FlowFinding[];
}

/** Canonical text of a flow definition (what is stored, hashed and uploaded). */
export function renderFlow(flow: unknown): string {
  return JSON.stringify(flow, null, 2);
}

export function validateFlowJson(input: string | unknown, opts: ValidateOptions = {}): ValidationResult {
  const maxBytes = opts.maxBytes ?? MAX_FLOW_BYTES;
  let text: string;
  let flow: unknown;
  if (typeof input === 'string') {
    text = input;
  } else {
    flow = input;
    text = renderFlow(input) ?? '';
  }
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) {
    const f = atStart({
      rule: 'size',
      error: 'FLOW_JSON_TOO_LARGE',
      error_type: 'JSON_SCHEMA_ERROR',
      message: `The Flow JSON is ${bytes} bytes; the limit is ${maxBytes} bytes.`,
      severity: 'error',
      pointer: '',
    });
    return { valid: false, text, findings: [f] };
  }
  if (typeof input === 'string') {
    try {
      flow = JSON.parse(text);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      const { line, column } = positionOfOffset(text, syntaxErrorOffset(text));
      return {
        valid: false,
        text,
        findings: [
          {
            rule: 'json',
            error: 'INVALID_JSON',
            error_type: 'JSON_SYNTAX_ERROR',
            message: `The Flow JSON is not valid JSON (line ${line}, column ${column}): ${msg.replace(/\s+/g, ' ')}`,
            severity: 'error',
            pointer: '',
            line_start: line,
            line_end: line,
            column_start: column,
            column_end: column,
            pointers: [],
          },
        ],
      };
    }
  }
  const raw = checkFlow(flow);
  const findings = placeAll(text, raw);
  return { valid: !findings.some((f) => f.severity === 'error'), text, flow, findings };
}

function placeAll(text: string, raw: RawFinding[]): FlowFinding[] {
  if (raw.length === 0) return [];
  const spans = locate(text, raw.map((r) => r.pointer));
  return raw.map((r) => {
    const s = spans.get(r.pointer)!;
    return { ...r, ...s, pointers: [{ path: r.pointer, ...s }] };
  });
}

/** A finding about the whole text (its size), placed at its start. */
function atStart(r: RawFinding): FlowFinding {
  const s = { line_start: 1, line_end: 1, column_start: 1, column_end: 1 };
  return { ...r, ...s, pointers: [{ path: r.pointer, ...s }] };
}
