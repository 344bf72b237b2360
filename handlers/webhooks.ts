/** Webhook registrations (tag Webhooks): thin handlers over lib/webhooks/registrations.ts. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import * as registrations from '../lib/webhooks/registrations.js';

type Ops = operations;

export const createWebhook: Handler<Ops['createWebhook']> = async (req, deps) => ({
  status: 201,
  data: await registrations.createWebhook(deps, req.auth!, req.body),
});

export const listWebhooks: Handler<Ops['listWebhooks']> = async (req, deps) => ({
  data: { webhooks: await registrations.listWebhooks(deps, req.auth!.project.id) },
});

export const getWebhook: Handler<Ops['getWebhook']> = async (req, deps) => ({
  data: { webhook: await registrations.getWebhook(deps, req.auth!.project.id, req.params.id) },
});

export const updateWebhook: Handler<Ops['updateWebhook']> = async (req, deps) => ({
  data: { webhook: await registrations.updateWebhook(deps, req.auth!, req.params.id, req.body) },
});

export const deleteWebhook: Handler<Ops['deleteWebhook']> = async (req, deps) => ({
  data: { webhook: await registrations.deleteWebhook(deps, req.auth!.project.id, req.params.id) },
});
