/** One entry per operationId of openapi.yaml; the compiler and start-up both check the match. */
import type { operations } from '../generated/api.js';
import type { Handlers } from './types.js';
import * as meta from './meta.js';
import * as projects from './projects.js';

export const handlers: Handlers<operations> = {
  ping: meta.ping,
  getOpenApiDocument: meta.getOpenApiDocument,
  listProjects: projects.listProjects,
};
