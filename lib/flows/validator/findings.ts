/**
 * A validation finding in Meta's own shape (`error`, `error_type`, `message`, `line_start`,
 * `line_end`, `column_start`, `column_end`, `pointers[{ path, … }]`), plus what Meta does not
 * give: a `severity` (errors block saving and publishing, warnings do not), the JSON `pointer`
 * and the `rule` that produced it (the fixture corpus is organised by rule).
 */
import type { Span } from './positions.js';

export type Severity = 'error' | 'warning';
export type ErrorType = 'JSON_SYNTAX_ERROR' | 'JSON_SCHEMA_ERROR' | 'FLOW_JSON_ERROR';

/** Every rule of the validator; the fixture corpus has valid and invalid flows for each. */
export const RULES = [
  'json',
  'size',
  'structure',
  'version',
  'data_api_version',
  'routing_model',
  'screen_id',
  'terminal',
  'complete',
  'navigate',
  'references',
  'components',
  'limits',
  'min_version',
  'empty_string',
  'sensitive',
  'reachability',
] as const;
export type Rule = (typeof RULES)[number];

export interface FlowFinding extends Span {
  error: string;
  error_type: ErrorType;
  message: string;
  severity: Severity;
  rule: Rule;
  /** JSON pointer of the value the finding is about ('' is the whole document). */
  pointer: string;
  pointers: ({ path: string } & Span)[];
}

/** A finding before it is placed in the text. */
export interface RawFinding {
  rule: Rule;
  error: string;
  error_type: ErrorType;
  message: string;
  severity: Severity;
  pointer: string;
}
