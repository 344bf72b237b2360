/**
 * Responses that broke the contract during the current test (every response of a test app is
 * checked: lib/contract-checks/response-check.ts). tests/support/response-violations-hook.ts
 * fails the test that caused them with this message, so a leaked or missing field reads as
 * "getContact (GET /v1/contacts/{id}) answered 200 with a body that breaks the contract at
 * /data/contact/internal_note: must NOT have additional properties [rule: additionalProperties]"
 * rather than a bare "expected 200, received 500".
 */
import { describeViolation, type ResponseViolation } from '../../http/contract-checks/response-check.js';

let pending: ResponseViolation[] = [];

export function recordViolations(violations: ResponseViolation[]): void {
  pending.push(...violations);
}

/** The violations recorded since the last call (a test that provokes one on purpose takes it). */
export function takeViolations(): ResponseViolation[] {
  const taken = pending;
  pending = [];
  return taken;
}

export function violationsMessage(violations: ResponseViolation[]): string {
  return `A response broke the contract (openapi.yaml / admin-openapi.yaml):\n${violations.map((v) => `  ${describeViolation(v)}`).join('\n')}`;
}
