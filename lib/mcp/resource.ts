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

const LOOPBACK: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The base URL a request reached, when it is a loopback alias of PUBLIC_BASE_URL (development:
 * `localhost`, `127.0.0.1` and `[::1]` on the same port are one service); else PUBLIC_BASE_URL. The
 * protected-resource metadata and the 401's `resource_metadata` name the MCP URL as the client
 * wrote it, so the SDK's check that the metadata's resource is the URL it was given holds for both.
 */
export function reachedBaseUrl(publicBaseUrl: string, hostHeader: string | undefined): string {
  const base = publicBaseUrl.replace(/\/+$/, '');
  if (!hostHeader) return base;
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    return base;
  }
  if (!LOOPBACK.has(url.hostname) || url.pathname.replace(/\/+$/, '') !== '') return base;
  let reached: URL;
  try {
    reached = new URL(`${url.protocol}//${hostHeader}`);
  } catch {
    return base;
  }
  return LOOPBACK.has(reached.hostname) && reached.port === url.port ? reached.origin : base;
}
