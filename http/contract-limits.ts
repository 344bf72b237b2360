/** Limits the domain enforces again after the validator, read from the contract (never repeated in code). */
import type { Contract } from './contract.js';
import type { ContactLimits } from '../lib/conversations/contacts.js';

const limitsByDocument = new WeakMap<object, ContactLimits>();
const groupLimitsByDocument = new WeakMap<object, GroupLimits>();

function need(v: unknown, where: string, what: string): number {
  if (typeof v !== 'number') throw new Error(`Contract: ${where} must state a number (${what} reads its limit there)`);
  return v;
}

/** The limits of `UpdateContactRequest` and `AttributeValue` in a contract document. */
export function contactLimitsOf(contract: Contract): ContactLimits {
  let limits = limitsByDocument.get(contract.document);
  if (limits) return limits;
  const schemas = contract.document.components?.schemas ?? {};
  const body = schemas.UpdateContactRequest?.properties ?? {};
  const stringBranch = (schemas.AttributeValue?.oneOf ?? []).find((b: { type?: string }) => b?.type === 'string');
  const what = 'the contact update';
  limits = {
    name: need(body.name?.maxLength, 'UpdateContactRequest.name.maxLength', what),
    tag: need(body.tags?.properties?.add?.items?.maxLength, 'UpdateContactRequest.tags.add.items.maxLength', what),
    attributeKeys: need(body.attributes?.maxProperties, 'UpdateContactRequest.attributes.maxProperties', what),
    attributeKey: need(body.attributes?.propertyNames?.maxLength, 'UpdateContactRequest.attributes.propertyNames.maxLength', what),
    attributeString: need(stringBranch?.maxLength, 'AttributeValue (string branch).maxLength', what),
  };
  limitsByDocument.set(contract.document, limits);
  return limits;
}

/**
 * What the dashboard's group forms check before calling the API's own group functions, which the
 * contract's validator guards for the API: the subject's and description's longest lengths
 * (`CreateGroupRequest`, the same as `UpdateGroupRequest`'s), a join request id's, and a
 * participant's phone (the path parameter of `removeGroupParticipant`).
 */
export interface GroupLimits {
  subject: number;
  description: number;
  joinRequestId: number;
  phone: RegExp;
}

export function groupLimitsOf(contract: Contract): GroupLimits {
  let limits = groupLimitsByDocument.get(contract.document);
  if (limits) return limits;
  const schemas = contract.document.components?.schemas ?? {};
  const create = schemas.CreateGroupRequest?.properties ?? {};
  const update = schemas.UpdateGroupRequest?.properties ?? {};
  const what = "the dashboard's group forms";
  const subject = need(create.subject?.maxLength, 'CreateGroupRequest.subject.maxLength', what);
  const description = need(create.description?.maxLength, 'CreateGroupRequest.description.maxLength', what);
  if (update.subject?.maxLength !== subject || update.description?.maxLength !== description) {
    throw new Error(`Contract: UpdateGroupRequest's subject and description limits must be CreateGroupRequest's (${what} read one pair)`);
  }
  const params: Array<{ name?: string; schema?: { pattern?: unknown } }> = contract.document.paths?.['/v1/groups/{id}/participants/{phone}']?.delete?.parameters ?? [];
  const pattern = params.find((p) => p?.name === 'phone')?.schema?.pattern;
  if (typeof pattern !== 'string') throw new Error(`Contract: DELETE /v1/groups/{id}/participants/{phone} must state the phone's pattern (${what} reads it there)`);
  limits = {
    subject,
    description,
    joinRequestId: need(schemas.ApproveGroupJoinRequestsRequest?.properties?.join_request_ids?.items?.maxLength, 'ApproveGroupJoinRequestsRequest.join_request_ids.items.maxLength', what),
    phone: new RegExp(pattern),
  };
  groupLimitsByDocument.set(contract.document, limits);
  return limits;
}
