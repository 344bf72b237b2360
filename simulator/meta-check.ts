/**
 * The simulator refuses a send that Meta's published schema refuses (simulator/meta/), with
 * Meta's error: a missing top-level parameter or an invalid one is code 100; inside the message's
 * object, a missing parameter is 131008 and an invalid one 131009. The details name the field the
 * way Graph does (`template['language']['code']`).
 */
import { paramError, waError, type GraphError } from './errors.js';
import { metaSchemas, type MetaIssue } from './meta/validator.js';
import type { Operation } from './meta/repair.js';

const SEND = 'POST /{Version}/{Phone-Number-ID}/messages' as const;

/** `/template/components/0/type` → `template['components'][0]['type']`. */
export function fieldName(pointer: string, child?: string): string {
  const parts = pointer.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) parts.push(child);
  if (parts.length === 0) return 'body';
  return parts[0] + parts.slice(1).map((p) => (/^\d+$/.test(p) ? `[${p}]` : `['${p}']`)).join('');
}

const valueAt = (body: unknown, pointer: string): unknown =>
  pointer.split('/').slice(1).reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), body);

/** Meta's error for the first issue Meta's schema finds. */
export function graphErrorOf(issue: MetaIssue, body: unknown): GraphError {
  const top = issue.instancePath === '';
  if (issue.keyword === 'required') {
    const field = fieldName(issue.instancePath, String(issue.params.missingProperty));
    return top ? paramError(`The parameter ${field} is required.`) : waError(131008, `The parameter ${field} is required.`);
  }
  if (issue.keyword === 'additionalProperties') {
    const key = String(issue.params.additionalProperty);
    const details = `Unexpected key "${key}" on param "${top ? 'body' : fieldName(issue.instancePath)}".`;
    return top ? paramError('Invalid parameter', details) : waError(131009, details);
  }
  const field = fieldName(issue.instancePath);
  let details = `Param ${field} ${issue.message}`;
  if (issue.keyword === 'enum' && Array.isArray(issue.params.allowedValues)) {
    details = `Param ${field} must be one of {${issue.params.allowedValues.map(String).join(', ')}} - got ${JSON.stringify(valueAt(body, issue.instancePath)) ?? 'nothing'}.`;
  }
  return issue.instancePath.split('/').length <= 2 ? paramError('Invalid parameter', details) : waError(131009, details);
}

const WRAPPERS = new Set(['if', 'oneOf', 'anyOf', 'allOf', 'then']);
const depth = (i: MetaIssue) => (i.instancePath ? i.instancePath.split('/').length - 1 : 0);

/** The issue to report: the deepest concrete one (a oneOf's first branch is not the whole story). */
export function mainIssue(issues: MetaIssue[]): MetaIssue {
  const concrete = issues.filter((i) => !WRAPPERS.has(i.keyword));
  if (!concrete.length) return issues[0];
  return concrete.reduce((best, i) => (depth(i) > depth(best) ? i : best));
}

const MARKETING_SEND = 'POST /{Version}/{Phone-Number-ID}/marketing_messages' as const;

/** Null when Meta's schema accepts the send body (of /messages, or of /marketing_messages), else the error to answer. */
export function checkSendBody(body: unknown, route: 'messages' | 'marketing_messages' = 'messages'): GraphError | null {
  const issues = metaSchemas().request(route === 'marketing_messages' ? MARKETING_SEND : SEND, body, 'application/json');
  return issues.length ? graphErrorOf(mainIssue(issues), body) : null;
}

/** Null when Meta's schema of template creation accepts the body, else code 100 naming the field. */
export function checkTemplateCreateBody(body: unknown): GraphError | null {
  return checkParams('POST /{Version}/{WABA-ID}/message_templates', body);
}

/** Null when Meta's schema of POST /{pnid}/calls accepts the body, else code 100 naming the field. */
export function checkCallBody(body: unknown): GraphError | null {
  return checkParams('POST /{Version}/{Phone-Number-ID}/calls', body);
}

/** Outside a send, Graph answers any refused field with code 100, naming it. */
function checkParams(op: Operation, body: unknown): GraphError | null {
  const issues = metaSchemas().request(op, body, 'application/json');
  if (!issues.length) return null;
  const i = mainIssue(issues);
  const field = i.keyword === 'required' ? fieldName(i.instancePath, String(i.params.missingProperty)) : fieldName(i.instancePath);
  return paramError('Invalid parameter', `Param ${field} ${i.message}.`);
}

/** Compiles the send schema now (about 150 ms, once per process) rather than during the first send. */
export function warmSendCheck(): void {
  metaSchemas().request(SEND, null);
  metaSchemas().request(MARKETING_SEND, null);
  metaSchemas().request('POST /{Version}/{WABA-ID}/message_templates', null);
}
