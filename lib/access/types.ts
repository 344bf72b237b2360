/** Who is calling: a credential, the projects it reaches, and the project a request acts on. */

export interface ProjectRef {
  id: string;
  name: string;
  status: 'active' | 'paused' | 'deleted';
}

export interface Grant {
  project: ProjectRef;
  scopes: string[];
  isDefault: boolean;
}

export type Credential =
  | { kind: 'api_key'; id: string; rateKey: string; grants: [Grant] }
  | {
      kind: 'access_token';
      id: string;
      connectionId: string;
      rateKey: string;
      grants: Grant[];
      /**
       * The resource (RFC 8707) the token is bound to: the MCP endpoint's URL for a token from the OAuth
       * flow (lib/oauth), null for an operator-issued token (good for any). /v1 accepts both alike.
       */
      resource: string | null;
      /** The OAuth client it was issued to; null for an operator-issued token. */
      clientId: string | null;
      expiresAt: Date;
    };

/** The credential of a request and the project it acts on, with that project's scopes only. */
export interface AuthContext {
  credential: Credential;
  project: ProjectRef;
  scopes: string[];
}
