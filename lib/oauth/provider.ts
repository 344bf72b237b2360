/**
 * The authorization server's storage behind the MCP SDK's router (`mcpAuthRouter`, http/oauth.ts): an
 * `OAuthServerProvider` over PostgreSQL. Nothing is held in memory, so any instance serves any step
 * of a flow. The rules (docs/agents-oauth.md):
 * - a client_id that is an https URL is a client metadata document's (lib/oauth/client-metadata.ts):
 *   fetched, checked and cached, with no registration; dynamic registration stays as the fallback;
 * - registration (RFC 7591): redirect URIs https, http on a loopback host, or (a public client only) a
 *   native app's private-use scheme, matched exactly; its size bounded (rules.ts
 *   LIMITS: 5 redirect URIs of 512 characters, the stored metadata 4 KiB); the client secret the SDK
 *   generated is kept as its SHA-256 only, answered once, and never returned by `getClient` (the SDK
 *   would compare it in plain text): `checkClientSecret` authenticates a confidential client instead;
 * - `/authorize` stores the request and sends the browser to the dashboard's consent page; a
 *   `resource` (RFC 8707) other than the MCP endpoint is `invalid_target`, a scope outside the
 *   catalogue `invalid_scope`; without a resource the grant is bound to the MCP endpoint anyway;
 * - codes are single use (60 s); a code used twice revokes every token of its grant;
 * - access tokens are the connection model's `mcp_at_` tokens (lib/access/connections.ts), bound to
 *   client, grant and resource; refresh tokens (`mcp_rt_`) rotate on use; one presented again within
 *   LIMITS.refreshGraceSeconds of its rotation (a parallel or retried refresh) is answered the same
 *   pair, kept sealed on its row for that long; later, it revokes its whole grant; a refresh may ask
 *   for fewer scopes, never more;
 * - revocation (RFC 7009) of a client's own access or refresh token (a refresh token takes its grant
 *   with it); an unknown token is not an error.
 */
import type { OAuthServerProvider, AuthorizationParams } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { OAuthClientInformationFull, OAuthTokenRevocationRequest, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import {
  InvalidClientError,
  CustomOAuthError,
  InvalidClientMetadataError,
  InvalidGrantError,
  InvalidRequestError,
  InvalidScopeError,
  InvalidTargetError,
  InvalidTokenError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { Deps } from '../deps.js';
import { credentialsChanged } from '../access/credential-cache.js';
import { resolveCredential, TOKEN_PREFIX } from '../access/credentials.js';
import { issueTokenOn, revokeClientTokenOn, revokeGrantTokensOn, scopesOfConnection } from '../access/connections.js';
import { ApiError } from '../platform/errors.js';
import { hashSecret, safeEqual } from '../platform/secrets.js';
import * as store from './store.js';
import { ClientMetadataError, clientMetadataDocuments, isMetadataClientId } from './client-metadata.js';
import { CODE_CHALLENGE, LIMITS, isKnownScope, redirectUriProblem, sameResource, scopeList } from './rules.js';
import { inPrismaTransaction } from '../platform/db/transaction.js';

export type OAuthDeps = Pick<Deps, 'db' | 'clock' | 'config' | 'logger' | 'secretBox'> & Partial<Pick<Deps, 'credentialCache'>>;

export interface OAuthProviderOptions {
  /** The MCP endpoint's URL (lib/mcp/resource.ts): every grant is bound to it. */
  resourceUrl: string;
}

/**
 * The authorization server's domain: the SDK's OAuthServerProvider but for `authorize`, whose HTTP
 * answer (the redirect to the consent page) is the edge's (http/oauth.ts); here it records the
 * request and answers its id.
 */
export type OAuthDomain = Omit<OAuthServerProvider, 'authorize'> & {
  /** Checks an authorization request and stores it for the consent page; its id. */
  beginAuthorization(client: OAuthClientInformationFull, params: AuthorizationParams): Promise<string>;
};

/** The pair a rotation answered, as sealed on the used refresh token's row. */
interface Successor {
  access_token: string;
  refresh_token: string;
  scope: string;
  /** Epoch milliseconds. */
  access_expires_at: number;
}

/** Where a successor pair is sealed: the AAD that binds it to its row and column. */
const successorPlace = (id: string) => `oauth_refresh_tokens:${id}:successor_sealed`;

/** The client authentication methods registration accepts (and the metadata advertises). */
export const TOKEN_AUTH_METHODS = ['none', 'client_secret_post', 'client_secret_basic'] as const;
const AUTH_METHODS: ReadonlySet<string> = new Set(TOKEN_AUTH_METHODS);
const GRANT_TYPES = new Set(['authorization_code', 'refresh_token']);

/**
 * The registered client as the SDK knows it: its metadata and id, never its secret. A redirect URI
 * stored under an earlier, looser rule that the current one refuses (issue 67: `feed:` and the like)
 * is left out, so /authorize answers it as unregistered instead of redirecting there.
 */
function clientInfo(row: store.ClientRow): OAuthClientInformationFull {
  return {
    ...(row.metadata as Record<string, unknown>),
    client_id: row.id,
    redirect_uris: row.redirectUris.filter((u) => redirectUriProblem(u, { publicClient: row.secretHash === null }) === undefined),
    client_id_issued_at: Math.floor(row.createdAt.getTime() / 1000),
  } as OAuthClientInformationFull;
}

/**
 * Authenticates a client at /token and /revoke: 'unknown' (no such client), 'refused' (a confidential
 * client whose secret is missing or wrong: its SHA-256 is compared in constant time), or 'ok'.
 */
export async function checkClientSecret(deps: Pick<Deps, 'db'>, clientId: string, secret: string | undefined): Promise<'unknown' | 'refused' | 'ok'> {
  const row = await store.findClient(deps.db, clientId);
  if (!row) return 'unknown';
  if (row.secretHash === null) return 'ok';
  if (secret === undefined || secret.length === 0 || secret.length > 200) return 'refused';
  return safeEqual(hashSecret(secret), row.secretHash) ? 'ok' : 'refused';
}

/**
 * Who a /token request is on behalf of, for its rate limits: its client (and, for a refresh, its
 * grant) when it carries a code or refresh token of that client; undefined otherwise (such requests
 * are limited by address). Keyed on a valid credential, so nobody can spend a client's budget with
 * its client_id alone.
 */
export async function tokenRequestSubject(
  deps: Pick<Deps, 'db'>,
  clientId: string,
  form: Record<string, unknown>,
): Promise<{ clientId: string; grantId?: string } | undefined> {
  if (form.grant_type === 'refresh_token' && typeof form.refresh_token === 'string') {
    const row = await store.findRefreshToken(deps.db, form.refresh_token);
    return row && row.clientId === clientId ? { clientId, grantId: row.grantId } : undefined;
  }
  if (form.grant_type === 'authorization_code' && typeof form.code === 'string') {
    const row = await store.findCode(deps.db, form.code);
    return row && row.clientId === clientId ? { clientId } : undefined;
  }
  return undefined;
}

export function createOAuthProvider(deps: OAuthDeps, opts: OAuthProviderOptions): OAuthDomain {
  const now = () => deps.clock.now();

  const { revokeGrant, issuePairOn, scopeAnswer, replayOrRevoke, liveCode } = grantOps(deps);

  const documents = clientMetadataDocuments(deps);

  const clientsStore = registeredClients(deps, documents);

  return {
    get clientsStore() {
      return clientsStore;
    },

    async beginAuthorization(client: OAuthClientInformationFull, params: AuthorizationParams): Promise<string> {
      const scopes = scopeList(params.scopes);
      const unknown = scopes.filter((s) => !isKnownScope(s));
      if (unknown.length) throw new InvalidScopeError(`Unknown scope: ${unknown.slice(0, 3).join(', ').slice(0, 200)}.`);
      if (params.resource !== undefined && !sameResource(params.resource, opts.resourceUrl)) {
        throw new InvalidTargetError(`This authorization server issues tokens only for ${opts.resourceUrl}.`);
      }
      if (!CODE_CHALLENGE.test(params.codeChallenge)) throw new InvalidRequestError('code_challenge must be the base64url SHA-256 of the code verifier (43 characters).');
      if (params.state !== undefined && params.state.length > LIMITS.state) throw new InvalidRequestError(`state: at most ${LIMITS.state} characters.`);
      return store.createRequest(deps.db, {
        clientId: client.client_id,
        redirectUri: params.redirectUri,
        codeChallenge: params.codeChallenge,
        state: params.state,
        scopes,
        resource: opts.resourceUrl,
        now: now(),
        ttlSeconds: LIMITS.requestSeconds,
      });
    },

    async challengeForAuthorizationCode(client, authorizationCode) {
      const row = await liveCode(client, authorizationCode);
      return row.codeChallenge;
    },

    async exchangeAuthorizationCode(client, authorizationCode, _codeVerifier, redirectUri, resource): Promise<OAuthTokens> {
      const row = await liveCode(client, authorizationCode);
      if (redirectUri !== undefined && redirectUri !== row.redirectUri) throw new InvalidGrantError('redirect_uri differs from the one of the authorization request.');
      if (resource !== undefined && !sameResource(resource, row.resource)) throw new InvalidTargetError(`The code was granted for ${row.resource}.`);
      const at = now();
      const lifetime = deps.config.oauthAccessTokenSeconds;
      const issued = await inPrismaTransaction(deps.db.prisma, async (tx) => {
        if (!(await store.useCodeOn(tx, row.id, at))) return null;
        return issuePairOn(tx, row, at, []);
      });
      if (!issued) {
        // Another request used it between our read and our update (or it just expired).
        await liveCode(client, authorizationCode);
        throw new InvalidGrantError('The authorization code has expired.');
      }
      await credentialsChanged(deps);
      return { access_token: issued.access, token_type: 'Bearer', expires_in: lifetime, refresh_token: issued.refresh, scope: await scopeAnswer(row.connectionId, []) };
    },

    async exchangeRefreshToken(client, refreshToken, scopes, resource): Promise<OAuthTokens> {
      const row = await store.findRefreshToken(deps.db, refreshToken);
      if (!row || row.clientId !== client.client_id) throw new InvalidGrantError('The refresh token is unknown.');
      if (row.revokedAt) throw new InvalidGrantError('The refresh token is revoked.');
      if (row.usedAt) return replayOrRevoke(row.id);
      const at = now();
      if (row.expiresAt <= at) throw new InvalidGrantError('The refresh token has expired.');
      if (resource !== undefined && !sameResource(resource, row.resource)) throw new InvalidTargetError(`The grant is for ${row.resource}.`);
      const asked = scopeList(scopes);
      const beyond = asked.filter((s) => !row.scopes.includes(s));
      if (beyond.length) throw new InvalidScopeError(`Beyond the grant: ${beyond.slice(0, 3).join(', ').slice(0, 200)}.`);
      const narrowed = asked.length > 0 && asked.length < row.scopes.length ? asked : [];
      const lifetime = deps.config.oauthAccessTokenSeconds;
      const issued = await inPrismaTransaction(deps.db.prisma, async (tx) => {
        if (!(await store.useRefreshTokenOn(tx, row.id, at))) return null;
        const { access, refresh } = await issuePairOn(tx, row, at, narrowed);
        const scope = await scopeAnswer(row.connectionId, narrowed, tx);
        const pair: Successor = { access_token: access, refresh_token: refresh, scope, access_expires_at: at.getTime() + lifetime * 1000 };
        await store.recordSuccessorOn(tx, row.id, deps.secretBox.seal(JSON.stringify(pair), successorPlace(row.id)));
        return pair;
      });
      // Used by a concurrent request between our read and our update (its update waited for that
      // rotation's commit, so the row now shows it): within the grace window, that rotation's pair.
      if (!issued) return replayOrRevoke(row.id);
      await credentialsChanged(deps);
      return { access_token: issued.access_token, token_type: 'Bearer', expires_in: lifetime, refresh_token: issued.refresh_token, scope: issued.scope };
    },

    async verifyAccessToken(token: string): Promise<AuthInfo> {
      let credential;
      try {
        credential = await resolveCredential(deps.db, `Bearer ${token}`, now(), deps.credentialCache);
      } catch (e) {
        if (e instanceof ApiError) throw new InvalidTokenError(e.message);
        throw e;
      }
      if (credential.kind !== 'access_token') throw new InvalidTokenError('Not an access token (mcp_at_…).');
      return {
        token,
        clientId: credential.clientId ?? credential.connectionId,
        scopes: [...new Set(credential.grants.flatMap((g) => g.scopes))],
        expiresAt: Math.floor(credential.expiresAt.getTime() / 1000),
        ...(credential.resource ? { resource: new URL(credential.resource) } : {}),
        extra: { connectionId: credential.connectionId, tokenId: credential.id },
      };
    },

    async revokeToken(client: OAuthClientInformationFull, request: OAuthTokenRevocationRequest): Promise<void> {
      const token = request.token;
      if (token.startsWith(store.REFRESH_PREFIX)) {
        const row = await store.findRefreshToken(deps.db, token);
        if (row && row.clientId === client.client_id && !row.revokedAt) await revokeGrant(row.grantId, row.clientId, 'refresh token revoked by its client');
        return;
      }
      if (token.startsWith(TOKEN_PREFIX) && token.length <= 200) {
        if (await revokeClientTokenOn(deps.db.prisma, client.client_id, token, now())) await credentialsChanged(deps);
      }
      // Anything else: unknown to us, which RFC 7009 answers with 200 all the same.
    },
  };
}

/**
 * Clients: registered ones (RFC 7591, checked here: redirect URIs, auth method, names, grant and
 * response types, stored size) and client ID metadata documents (a URL as client_id: fetched or
 * cached, never registered).
 */
function registeredClients(deps: OAuthDeps, documents: ReturnType<typeof clientMetadataDocuments>): OAuthRegisteredClientsStore {
  const now = () => deps.clock.now();
  return {
    async getClient(clientId) {
      if (isMetadataClientId(clientId)) {
        // A URL is a client metadata document's: fetched (or cached) and checked, never registered.
        try {
          const { host: _host, ...client } = await documents.resolve(clientId);
          return client;
        } catch (e) {
          if (e instanceof ClientMetadataError) throw new InvalidClientError(`client_id metadata document: ${e.message}.`);
          throw e;
        }
      }
      const row = await store.findClient(deps.db, clientId);
      return row ? clientInfo(row) : undefined;
    },

    async registerClient(registration) {
      // The SDK generated the id (and a secret unless the client is public) before calling us; its type leaves the id out.
      const client = registration as OAuthClientInformationFull;
      const uris = client.redirect_uris ?? [];
      if (uris.length === 0) throw new InvalidClientMetadataError('redirect_uris: register at least one redirect URI.');
      if (uris.length > LIMITS.redirectUris) throw new InvalidClientMetadataError(`redirect_uris: at most ${LIMITS.redirectUris}.`);
      const method = client.token_endpoint_auth_method ?? 'client_secret_post';
      if (!AUTH_METHODS.has(method)) throw new InvalidClientMetadataError(`token_endpoint_auth_method: one of none, client_secret_post, client_secret_basic (not ${method.slice(0, 50)}).`);
      for (const uri of uris) {
        const problem = redirectUriProblem(uri, { publicClient: method === 'none' });
        if (problem) throw new CustomOAuthError('invalid_redirect_uri', `redirect_uris: ${problem}.`);
      }
      const name = client.client_name?.trim() ?? '';
      if (name.length > LIMITS.clientName) throw new InvalidClientMetadataError(`client_name: at most ${LIMITS.clientName} characters.`);
      const unsupported = (client.grant_types ?? []).filter((g) => !GRANT_TYPES.has(g));
      if (unsupported.length) throw new InvalidClientMetadataError(`grant_types: only authorization_code and refresh_token (not ${unsupported.join(', ').slice(0, 100)}).`);
      if ((client.response_types ?? []).some((t) => t !== 'code')) throw new InvalidClientMetadataError('response_types: only code.');
      const clientId = client.client_id;
      if (!clientId) throw new InvalidClientMetadataError('client_id was not generated.');

      const { client_secret: secret, client_secret_expires_at: _expires, client_id: _id, client_id_issued_at: _issued, ...metadata } = client;
      const registered = {
        ...metadata,
        redirect_uris: uris,
        token_endpoint_auth_method: method,
        grant_types: client.grant_types ?? ['authorization_code', 'refresh_token'],
        response_types: client.response_types ?? ['code'],
        ...(name ? { client_name: name } : {}),
      };
      const stored = Buffer.byteLength(JSON.stringify(registered));
      if (stored > LIMITS.registrationStored) {
        throw new InvalidClientMetadataError(`the registration's metadata is ${stored} bytes as stored; at most ${LIMITS.registrationStored} (leave out or shorten optional fields such as logo_uri, contacts, jwks, software_statement).`);
      }
      const row = await store.createClient(deps.db, {
        id: clientId,
        name,
        redirectUris: uris,
        metadata: registered,
        secretHash: method === 'none' || !secret ? null : hashSecret(secret),
        now: now(),
      });
      deps.logger.info('oauth: client registered', { client_id: row.id, public: row.secretHash === null });
      // The secret is answered this once; it never expires (0).
      return {
        ...clientInfo(row),
        ...(row.secretHash !== null ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
      };
    },
  };
}

/** What the token endpoint does to a grant's codes and tokens: issue a pair, answer a replay, revoke. */
function grantOps(deps: OAuthDeps) {
  const now = () => deps.clock.now();

  /** A code or refresh token used twice: every access and refresh token of its grant stops now, on every instance. */
  async function revokeGrant(grantId: string, clientId: string, why: string): Promise<void> {
    const at = now();
    const [access, refresh] = await inPrismaTransaction(deps.db.prisma, async (tx) => [
      await revokeGrantTokensOn(tx, grantId, at),
      await store.revokeGrantRefreshTokensOn(tx, grantId, at),
    ]);
    deps.logger.warn('oauth: grant revoked', { grant_id: grantId, client_id: clientId, reason: why, access_tokens: access, refresh_tokens: refresh });
    await credentialsChanged(deps);
  }

  /**
   * An access token and a refresh token of the grant `row` names (a code's or a refresh token's),
   * in the caller's transaction; the access token only `narrowed` of the grant's scopes when given.
   */
  async function issuePairOn(
    tx: Parameters<typeof issueTokenOn>[0] & Parameters<typeof store.createRefreshTokenOn>[0],
    row: { clientId: string; connectionId: string; grantId: string; resource: string; scopes: string[] },
    at: Date,
    narrowed: string[],
  ): Promise<{ access: string; refresh: string }> {
    const access = await issueTokenOn(tx, {
      connectionId: row.connectionId,
      now: at,
      expiresInSeconds: deps.config.oauthAccessTokenSeconds,
      binding: { clientId: row.clientId, grantId: row.grantId, resource: row.resource, scopes: narrowed },
    });
    const refresh = await store.createRefreshTokenOn(tx, {
      clientId: row.clientId,
      connectionId: row.connectionId,
      grantId: row.grantId,
      resource: row.resource,
      scopes: row.scopes,
      now: at,
      ttlSeconds: deps.config.oauthRefreshTokenSeconds,
    });
    return { access: access.secret, refresh };
  }

  /** The `scope` of a token answer: what the connection holds now (only `narrowed` of it, when given). */
  async function scopeAnswer(connectionId: string, narrowed: string[], on: Parameters<typeof scopesOfConnection>[0] = deps.db.prisma): Promise<string> {
    const held = await scopesOfConnection(on, connectionId);
    return (narrowed.length ? held.filter((s) => narrowed.includes(s)) : held).join(' ');
  }

  /**
   * A refresh token found used: within the grace window after its rotation, and its grant not
   * revoked, the pair that rotation answered (a parallel or retried refresh of the same client gets
   * the same tokens, so the grant stays one chain); otherwise a reuse, which revokes the grant.
   */
  async function replayOrRevoke(id: string): Promise<OAuthTokens> {
    const row = await store.findRefreshTokenById(deps.db, id);
    if (!row) throw new InvalidGrantError('The refresh token is unknown.');
    if (row.revokedAt) throw new InvalidGrantError('The refresh token is revoked.');
    // Not used after all: our conditional update found it expired.
    if (!row.usedAt) throw new InvalidGrantError('The refresh token has expired.');
    const at = now().getTime();
    const inGrace = at - row.usedAt.getTime() <= LIMITS.refreshGraceSeconds * 1000;
    if (inGrace && row.successorSealed) {
      const pair = JSON.parse(deps.secretBox.open(row.successorSealed, successorPlace(row.id))) as Successor;
      const expiresIn = Math.floor((pair.access_expires_at - at) / 1000);
      if (expiresIn > 0) {
        deps.logger.info('oauth: refresh answered again within its grace window', { client_id: row.clientId, grant_id: row.grantId });
        return { access_token: pair.access_token, token_type: 'Bearer', expires_in: expiresIn, refresh_token: pair.refresh_token, scope: pair.scope };
      }
    }
    await revokeGrant(row.grantId, row.clientId, 'refresh token reused after rotation');
    throw new InvalidGrantError('The refresh token was already used (it is rotated at each use); every token of this grant is now revoked.');
  }

  /** A code of this client that can still be exchanged; a used one revokes its grant. */
  async function liveCode(client: OAuthClientInformationFull, code: string): Promise<store.CodeRow> {
    const row = await store.findCode(deps.db, code);
    if (!row || row.clientId !== client.client_id) throw new InvalidGrantError('The authorization code is unknown.');
    if (row.usedAt) {
      await revokeGrant(row.grantId, row.clientId, 'authorization code used twice');
      throw new InvalidGrantError('The authorization code was already used; every token issued from it is now revoked.');
    }
    if (row.expiresAt <= now()) throw new InvalidGrantError('The authorization code has expired.');
    return row;
  }

  return { revokeGrant, issuePairOn, scopeAnswer, replayOrRevoke, liveCode };
}
