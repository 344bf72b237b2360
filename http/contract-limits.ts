/** Limits the domain enforces again after the validator, read from the contract (never repeated in code). */
import type { Contract } from './contract.js';
import type { ContactLimits } from '../lib/conversations/contacts.js';

const limitsByDocument = new WeakMap<object, ContactLimits>();

/** The limits of `UpdateContactRequest` and `AttributeValue` in a contract document. */
export function contactLimitsOf(contract: Contract): ContactLimits {
  let limits = limitsByDocument.get(contract.document);
  if (limits) return limits;
  const schemas = contract.document.components?.schemas ?? {};
  const body = schemas.UpdateContactRequest?.properties ?? {};
  const need = (v: unknown, where: string): number => {
    if (typeof v !== 'number') throw new Error(`Contract: ${where} must state a number (the contact update reads its limit there)`);
    return v;
  };
  const stringBranch = (schemas.AttributeValue?.oneOf ?? []).find((b: { type?: string }) => b?.type === 'string');
  limits = {
    name: need(body.name?.maxLength, 'UpdateContactRequest.name.maxLength'),
    tag: need(body.tags?.properties?.add?.items?.maxLength, 'UpdateContactRequest.tags.add.items.maxLength'),
    attributeKeys: need(body.attributes?.maxProperties, 'UpdateContactRequest.attributes.maxProperties'),
    attributeKey: need(body.attributes?.propertyNames?.maxLength, 'UpdateContactRequest.attributes.propertyNames.maxLength'),
    attributeString: need(stringBranch?.maxLength, 'AttributeValue (string branch).maxLength'),
  };
  limitsByDocument.set(contract.document, limits);
  return limits;
}
