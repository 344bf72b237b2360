/**
 * An agent's OAuth storage for the SDK's client (`OAuthClientProvider`): its registration, tokens, PKCE
 * verifier and where it sent the browser. The redirect URI, the registered metadata and a client ID
 * metadata document URL are the agent's to choose; `keepRefreshToken: false` keeps only access tokens.
 */
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { REDIRECT } from './oauth.js';

export interface AgentOptions {
  redirectUrl?: string;
  metadata?: Partial<OAuthClientMetadata>;
  clientMetadataUrl?: string;
  keepRefreshToken?: boolean;
}

export class AgentStorage implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier?: string;
  authorizationUrl?: URL;
  constructor(private readonly opts: AgentOptions = {}) {}
  get redirectUrl() {
    return this.opts.redirectUrl ?? REDIRECT;
  }
  get clientMetadataUrl() {
    return this.opts.clientMetadataUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Desk agent',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...this.opts.metadata,
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = this.opts.keepRefreshToken === false ? { ...tokens, refresh_token: undefined } : tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier!;
  }
}
