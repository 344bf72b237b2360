/** One entry per operationId of openapi.yaml; the compiler and start-up both check the match. */
import type { operations } from '../generated/api.js';
import type { Handlers } from '../http/handler-types.js';
import * as serviceInfo from './service-info.js';
import * as projects from './projects.js';
import * as messages from './messages.js';
import * as conversations from './conversations.js';
import * as contacts from './contacts.js';
import * as templates from './templates.js';
import * as media from './media.js';
import * as webhooks from './webhooks.js';
import * as tables from './tables.js';
import * as segments from './segments.js';
import * as broadcasts from './broadcasts.js';
import * as contactImports from './contact-imports.js';
import * as files from './files.js';
import * as deployments from './deployments.js';
import * as flows from './flows.js';
import * as cannedReplies from './canned-replies.js';
import * as calls from './calls.js';
import * as groups from './groups.js';

export const handlers: Handlers<operations> = {
  ping: serviceInfo.ping,
  getOpenApiDocument: serviceInfo.getOpenApiDocument,
  listProjects: projects.listProjects,
  sendMessage: messages.sendMessage,
  getMessage: messages.getMessage,
  listConversations: conversations.listConversations,
  getConversation: conversations.getConversation,
  updateConversationState: conversations.updateConversationState,
  listConversationMessages: conversations.listConversationMessages,
  assignConversation: conversations.assignConversation,
  controlConversationThread: conversations.controlConversationThread,
  unassignConversation: conversations.unassignConversation,
  setConversationLabels: conversations.setConversationLabels,
  changeConversationLabels: conversations.changeConversationLabels,
  setConversationResolution: conversations.setConversationResolution,
  listConversationNotes: conversations.listConversationNotes,
  createConversationNote: conversations.createConversationNote,
  listCannedReplies: cannedReplies.listCannedReplies,
  createCannedReply: cannedReplies.createCannedReply,
  deleteCannedReply: cannedReplies.deleteCannedReply,
  listCalls: calls.listCalls,
  startCall: calls.startCall,
  getCall: calls.getCall,
  actOnCall: calls.actOnCall,
  requestCallPermission: calls.requestCallPermission,
  listGroups: groups.listGroups,
  createGroup: groups.createGroup,
  getGroup: groups.getGroup,
  updateGroup: groups.updateGroup,
  deleteGroup: groups.deleteGroup,
  getGroupInviteLink: groups.getGroupInviteLink,
  resetGroupInviteLink: groups.resetGroupInviteLink,
  listGroupParticipants: groups.listGroupParticipants,
  removeGroupParticipant: groups.removeGroupParticipant,
  listGroupJoinRequests: groups.listGroupJoinRequests,
  approveGroupJoinRequests: groups.approveGroupJoinRequests,
  rejectGroupJoinRequests: groups.rejectGroupJoinRequests,
  listContacts: contacts.listContacts,
  getContact: contacts.getContact,
  updateContact: contacts.updateContact,
  getConsentKeywords: contacts.getConsentKeywords,
  setConsentKeywords: contacts.setConsentKeywords,
  listTemplates: templates.listTemplates,
  createTemplate: templates.createTemplate,
  getTemplate: templates.getTemplate,
  deleteTemplate: templates.deleteTemplate,
  uploadHeaderSample: templates.uploadHeaderSample,
  listMedia: media.listMedia,
  uploadMedia: media.uploadMedia,
  getMedia: media.getMedia,
  deleteMedia: media.deleteMedia,
  createWebhook: webhooks.createWebhook,
  listWebhooks: webhooks.listWebhooks,
  getWebhook: webhooks.getWebhook,
  updateWebhook: webhooks.updateWebhook,
  deleteWebhook: webhooks.deleteWebhook,
  listTableRows: tables.listTableRows,
  getTableSchema: tables.getTableSchema,
  insertTableRows: tables.insertTableRows,
  updateTableRows: tables.updateTableRows,
  deleteTableRows: tables.deleteTableRows,
  createSegment: segments.createSegment,
  listSegments: segments.listSegments,
  getSegment: segments.getSegment,
  updateSegment: segments.updateSegment,
  deleteSegment: segments.deleteSegment,
  createBroadcast: broadcasts.createBroadcast,
  listBroadcasts: broadcasts.listBroadcasts,
  getBroadcast: broadcasts.getBroadcast,
  listBroadcastRecipients: broadcasts.listBroadcastRecipients,
  createContactImport: contactImports.createContactImport,
  getContactImport: contactImports.getContactImport,
  listContactImportRows: contactImports.listContactImportRows,
  listFiles: files.listFiles,
  getFile: files.getFile,
  putFile: files.putFile,
  listDeployments: deployments.listDeployments,
  deployCode: deployments.deployCode,
  previewBot: deployments.previewBot,
  listFlows: flows.listFlows,
  generateFlow: flows.generateFlow,
  getFlow: flows.getFlow,
  updateFlow: flows.updateFlow,
  listFlowVersions: flows.listFlowVersions,
};
