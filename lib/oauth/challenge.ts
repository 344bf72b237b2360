/**
 * The `WWW-Authenticate` challenge of a protected resource (RFC 6750 §3, RFC 9728 §5.1): it names the
 * resource's metadata document, so an MCP client that got a 401 finds the authorization server.
 */

export interface BearerChallenge {
  /** The protected-resource metadata URL (lib/mcp/resource.ts protectedResourceMetadataUrl). */
  resourceMetadataUrl: string;
  /** invalid_token (unknown, expired, revoked, or bound to another resource), insufficient_scope, invalid_request; none when no credential was sent. */
  error?: 'invalid_token' | 'insufficient_scope' | 'invalid_request';
  description?: string;
  /** The scopes that would do (insufficient_scope). */
  scope?: readonly string[];
}

/** A quoted-string value: no quotes, backslashes or control characters in it. */
const quoted = (v: string) => `"${v.replace(/[\\"\u0000-\u001f\u007f]/g, ' ').slice(0, 300)}"`;

export function bearerChallenge(c: BearerChallenge): string {
  const parts = [`resource_metadata=${quoted(c.resourceMetadataUrl)}`];
  if (c.error) parts.push(`error=${quoted(c.error)}`);
  if (c.description) parts.push(`error_description=${quoted(c.description)}`);
  if (c.scope?.length) parts.push(`scope=${quoted(c.scope.join(' '))}`);
  return `Bearer ${parts.join(', ')}`;
}
