/** One entry per operationId of admin-openapi.yaml. */
import type { operations } from '../../generated/admin-api.js';
import type { Handlers } from '../../http/handler-types.js';
import { publishedDocument } from '../service-info.js';
import * as projects from './projects.js';
import * as keys from './keys.js';
import * as connections from './connections.js';
import * as channel from './channel.js';
import * as webhooks from './webhooks.js';
import * as runtimeTokens from './runtime-tokens.js';
import * as tables from './tables.js';
import * as broadcasts from './broadcasts.js';
import * as code from './code.js';
import * as flows from './flows.js';
import * as dashboard from './dashboard.js';
import * as rateCard from './rate-card.js';
import * as templates from './templates.js';
import * as secrets from './secrets.js';
import * as schedules from './schedules.js';
import * as projectFiles from './project-files.js';

export const adminHandlers: Handlers<operations> = {
  adminGetOpenApiDocument: async (_req, deps) => ({ raw: publishedDocument(deps.adminContract, deps.config.publicBaseUrl) }),
  adminListProjects: projects.adminListProjects,
  adminCreateProject: projects.adminCreateProject,
  adminGetProject: projects.adminGetProject,
  adminUpdateProject: projects.adminUpdateProject,
  adminDeleteProject: projects.adminDeleteProject,
  adminGetChannel: channel.adminGetChannel,
  adminSetChannel: channel.adminSetChannel,
  adminGrantDashboardRole: dashboard.adminGrantDashboardRole,
  adminListKeys: keys.adminListKeys,
  adminCreateKey: keys.adminCreateKey,
  adminGetKey: keys.adminGetKey,
  adminUpdateKey: keys.adminUpdateKey,
  adminRotateKey: keys.adminRotateKey,
  adminRevokeKey: keys.adminRevokeKey,
  adminListConnections: connections.adminListConnections,
  adminCreateConnection: connections.adminCreateConnection,
  adminGetConnection: connections.adminGetConnection,
  adminDeleteConnection: connections.adminDeleteConnection,
  adminAttachProject: connections.adminAttachProject,
  adminDetachProject: connections.adminDetachProject,
  adminListTokens: connections.adminListTokens,
  adminIssueToken: connections.adminIssueToken,
  adminRevokeToken: connections.adminRevokeToken,
  adminListRuntimeTokens: runtimeTokens.adminListRuntimeTokens,
  adminCreateRuntimeToken: runtimeTokens.adminCreateRuntimeToken,
  adminRevokeRuntimeToken: runtimeTokens.adminRevokeRuntimeToken,
  adminListWebhookDeliveries: webhooks.adminListWebhookDeliveries,
  adminListTables: tables.adminListTables,
  adminCreateTable: tables.adminCreateTable,
  adminRunTableDdl: tables.adminRunTableDdl,
  adminCopyPreviewSchema: tables.adminCopyPreviewSchema,
  adminGetTableQuota: tables.adminGetTableQuota,
  adminSetTableQuota: tables.adminSetTableQuota,
  adminListBroadcasts: broadcasts.adminListBroadcasts,
  adminGetBroadcast: broadcasts.adminGetBroadcast,
  adminApproveBroadcast: broadcasts.adminApproveBroadcast,
  adminCancelBroadcast: broadcasts.adminCancelBroadcast,
  adminSetBroadcastThroughput: broadcasts.adminSetBroadcastThroughput,
  adminGetRateCard: rateCard.adminGetRateCard,
  adminSetRateCard: rateCard.adminSetRateCard,
  adminDeleteRateCard: rateCard.adminDeleteRateCard,
  adminDecideTemplate: templates.adminDecideTemplate,
  adminCreateContactImport: broadcasts.adminCreateContactImport,
  adminGetContactImport: broadcasts.adminGetContactImport,
  adminListDeployments: code.adminListDeployments,
  adminRollbackDeployment: code.adminRollbackDeployment,
  adminListBotLogs: code.adminListBotLogs,
  adminGetBotCapacity: code.adminGetBotCapacity,
  adminListSetAsideEvents: code.adminListSetAsideEvents,
  adminListFlows: flows.adminListFlows,
  adminPublishFlow: flows.adminPublishFlow,
  adminDeprecateFlow: flows.adminDeprecateFlow,
  adminListSecrets: secrets.adminListSecrets,
  adminSetSecret: secrets.adminSetSecret,
  adminDeleteSecret: secrets.adminDeleteSecret,
  adminGetHttpAllowlist: secrets.adminGetHttpAllowlist,
  adminSetHttpAllowlist: secrets.adminSetHttpAllowlist,
  adminListSchedules: schedules.adminListSchedules,
  adminPauseSchedule: schedules.adminPauseSchedule,
  adminResumeSchedule: schedules.adminResumeSchedule,
  adminRunSchedule: schedules.adminRunSchedule,
  adminListScheduleRuns: schedules.adminListScheduleRuns,
  adminListProjectFiles: projectFiles.adminListProjectFiles,
  adminUploadProjectFile: projectFiles.adminUploadProjectFile,
  adminDownloadProjectFile: projectFiles.adminDownloadProjectFile,
  adminDeleteProjectFile: projectFiles.adminDeleteProjectFile,
};
