/** Types of closed-responses.js (a Spectral function, plain JavaScript so Spectral loads it). */
export interface OpenSchemaFinding {
  /** Where the open schema is written in the document. */
  path: Array<string | number>;
  /** The keyword that closes it; absent when no mechanical fix exists. */
  keyword?: 'additionalProperties' | 'unevaluatedProperties';
  message: string;
}
export function findOpenSchemas(document: unknown): OpenSchemaFinding[];
export default function closedResponses(document: unknown): Array<{ message: string; path: Array<string | number> }>;
