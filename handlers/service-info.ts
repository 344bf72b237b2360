/** Meta: credential check and the machine-readable description. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import type { Contract } from '../http/contract.js';

export const ping: Handler<operations['ping']> = async (req) => {
  const { project, scopes } = req.auth!;
  return { data: { ok: true, projectId: project.id, scopes: scopes as any } };
};

/** The document as published: the contract with `servers` pointing at this deployment. */
export function publishedDocument(contract: Contract, baseUrl: string): Record<string, unknown> {
  return { ...contract.document, servers: [{ url: baseUrl, description: 'This deployment' }] };
}

export const getOpenApiDocument: Handler<operations['getOpenApiDocument']> = async (_req, deps) => ({
  raw: publishedDocument(deps.contract, deps.config.publicBaseUrl),
});
