/** Operator API: OAuth agent connections (the rules: lib/access/connections.ts). */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import * as connections from '../../lib/access/connections.js';
import { connectionView, tokenView } from './serialize.js';

type Ops = operations;

export const adminListConnections: Handler<Ops['adminListConnections']> = async (_req, deps) => ({
  data: { connections: (await connections.listConnections(deps)).map(connectionView) },
});

export const adminCreateConnection: Handler<Ops['adminCreateConnection']> = async (req, deps) => ({
  status: 201,
  data: { connection: connectionView(await connections.createConnection(deps, req.body.name)) },
});

export const adminGetConnection: Handler<Ops['adminGetConnection']> = async (req, deps) => ({
  data: { connection: connectionView(await connections.findConnection(deps, req.params.connectionId)) },
});

export const adminDeleteConnection: Handler<Ops['adminDeleteConnection']> = async (req, deps) => ({
  data: { connection: connectionView(await connections.deleteConnection(deps, req.params.connectionId)) },
});

export const adminAttachProject: Handler<Ops['adminAttachProject']> = async (req, deps) => ({
  data: {
    connection: connectionView(
      await connections.attachProject(deps, req.params.connectionId, req.params.projectId, { scopes: req.body.scopes, isDefault: req.body.is_default }),
    ),
  },
});

export const adminDetachProject: Handler<Ops['adminDetachProject']> = async (req, deps) => ({
  data: { connection: connectionView(await connections.detachProject(deps, req.params.connectionId, req.params.projectId)) },
});

export const adminListTokens: Handler<Ops['adminListTokens']> = async (req, deps) => ({
  data: { tokens: (await connections.listTokens(deps, req.params.connectionId)).map(tokenView) },
});

export const adminIssueToken: Handler<Ops['adminIssueToken']> = async (req, deps) => {
  const { token, secret } = await connections.issueToken(deps, req.params.connectionId, req.body?.expires_in_seconds);
  return { status: 201, data: { token: tokenView(token), secret } };
};

export const adminRevokeToken: Handler<Ops['adminRevokeToken']> = async (req, deps) => ({
  data: { token: tokenView(await connections.revokeToken(deps, req.params.tokenId)) },
});
