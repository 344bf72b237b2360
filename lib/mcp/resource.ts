/**
 * The MCP server's identity as an OAuth protected resource (RFC 9728, RFC 8707): its canonical URL
 * is the service's public base URL with `/mcp`, and its metadata lives at the path-specific
 * well-known URL. Tokens from the authorization flow are bound to this URL; the authorization
 * server (lib/oauth) and the MCP endpoint (http/mcp) both take it from here.
 */
export const MCP_PATH = '/mcp';

export function mcpResourceUrl(publicBaseUrl: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}${MCP_PATH}`;
}

export function protectedResourceMetadataUrl(publicBaseUrl: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/.well-known/oauth-protected-resource${MCP_PATH}`;
}
