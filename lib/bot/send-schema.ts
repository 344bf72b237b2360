/**
 * The bot's sends are checked against the contract's SendMessageRequest, exactly as the request
 * validator checks POST /v1/messages, before they take the same path (lib/messaging/send-message.ts).
 */
import AjvModule, { type ValidateFunction } from 'ajv';
import type { SendContract as Contract } from './types.js';

const Ajv = (AjvModule as unknown as { default?: typeof AjvModule }).default ?? AjvModule;
const compiled = new WeakMap<Contract, ValidateFunction>();

export function sendValidator(contract: Contract): ValidateFunction {
  let v = compiled.get(contract);
  if (!v) {
    const ajv = new (Ajv as any)({ strict: false, allErrors: false, validateFormats: false });
    ajv.addSchema({ $id: 'contract', components: contract.document.components }, 'contract');
    v = ajv.compile({ $ref: 'contract#/components/schemas/SendMessageRequest' }) as ValidateFunction;
    compiled.set(contract, v);
  }
  return v;
}

/** Undefined when valid, else one line naming the field. */
export function sendBodyProblem(contract: Contract, body: unknown): string | undefined {
  const v = sendValidator(contract);
  if (v(body)) return undefined;
  const e = v.errors?.[0];
  return e ? `${e.instancePath || 'body'} ${e.message ?? 'is invalid'}` : 'invalid body';
}
