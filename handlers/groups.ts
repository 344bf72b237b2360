/** WhatsApp groups (docs/groups.md): create, list and read, change and delete, the invite link, participants, join requests. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import { positiveId as pathId } from '../http/path-ids.js';
import {
  approveJoinRequests, createGroup as create, deleteGroup as remove, getGroup as read, inviteLink, listGroups as list, listJoinRequests, listParticipants,
  rejectJoinRequests, removeParticipant, updateGroup as update,
} from '../lib/groups/groups.js';

export const listGroups: Handler<operations['listGroups']> = async (req, deps) => ({
  data: { groups: await list(deps, req.auth!.project.id, { limit: req.query.limit ?? 50, beforeId: req.query.before }) },
});

export const createGroup: Handler<operations['createGroup']> = async (req, deps) => ({
  status: 201,
  data: { group: await create(deps, req.auth!.project.id, req.body) },
});

export const getGroup: Handler<operations['getGroup']> = async (req, deps) => ({
  data: { group: await read(deps, req.auth!.project.id, pathId(req.params.id)) },
});

export const updateGroup: Handler<operations['updateGroup']> = async (req, deps) => ({
  data: { group: await update(deps, req.auth!.project.id, pathId(req.params.id), req.body) },
});

export const deleteGroup: Handler<operations['deleteGroup']> = async (req, deps) => ({
  data: { group: await remove(deps, req.auth!.project.id, pathId(req.params.id)) },
});

export const getGroupInviteLink: Handler<operations['getGroupInviteLink']> = async (req, deps) => ({
  data: await inviteLink(deps, req.auth!.project.id, pathId(req.params.id), false),
});

export const resetGroupInviteLink: Handler<operations['resetGroupInviteLink']> = async (req, deps) => ({
  data: await inviteLink(deps, req.auth!.project.id, pathId(req.params.id), true),
});

export const listGroupParticipants: Handler<operations['listGroupParticipants']> = async (req, deps) => ({
  data: { participants: await listParticipants(deps, req.auth!.project.id, pathId(req.params.id)) },
});

export const removeGroupParticipant: Handler<operations['removeGroupParticipant']> = async (req, deps) => ({
  data: await removeParticipant(deps, req.auth!.project.id, pathId(req.params.id), req.params.phone),
});

export const listGroupJoinRequests: Handler<operations['listGroupJoinRequests']> = async (req, deps) => ({
  data: { join_requests: await listJoinRequests(deps, req.auth!.project.id, pathId(req.params.id)) },
});

export const approveGroupJoinRequests: Handler<operations['approveGroupJoinRequests']> = async (req, deps) => ({
  data: await approveJoinRequests(deps, req.auth!.project.id, pathId(req.params.id), req.body.join_request_ids),
});

export const rejectGroupJoinRequests: Handler<operations['rejectGroupJoinRequests']> = async (req, deps) => ({
  data: await rejectJoinRequests(deps, req.auth!.project.id, pathId(req.params.id), req.body.join_request_ids),
});
