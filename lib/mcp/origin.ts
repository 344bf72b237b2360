/**
 * The Origin rule of the MCP endpoint and the OAuth endpoints (MCP 2025-11-25, Streamable HTTP,
 * "Security Warning": servers MUST validate Origin, and answer 403 when it is present and invalid).
 * It is the DNS-rebinding defence: a page on evil.example.com whose name now resolves to this
 * service still carries `Origin: https://evil.example.com`, which is refused here.
 *
 * Allowed: no Origin at all (agents, CLIs and servers send none; only browsers do); the origin of
 * PUBLIC_BASE_URL; each origin of MCP_ALLOWED_ORIGINS (a browser-based client such as the MCP
 * Inspector's page, `http://localhost:6274`); and, when PUBLIC_BASE_URL is a loopback address (a
 * development machine), the same port on the other loopback names (`localhost`, `127.0.0.1`,
 * `[::1]`), which are one service. `Origin: null` (a sandboxed or file page) is refused.
 */
/** The names of this machine (RFC 8252's loopback hosts): one service in development. */
const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

export interface OriginRule {
  /** Whether a request's Origin header may reach the endpoint. */
  allows(origin: string | string[] | undefined): boolean;
}

/** An origin as browsers write it (`scheme://host[:port]`, default port left out), or undefined when it is none. */
export function canonicalOrigin(raw: string): string | undefined {
  try {
    const url = new URL(raw.trim());
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    return url.origin;
  } catch {
    return undefined;
  }
}

/** The loopback aliases of a loopback URL's origin (same scheme and port), else just its origin. */
export function loopbackAliases(baseUrl: string): string[] {
  const url = new URL(baseUrl);
  if (!LOOPBACK_HOSTS.has(url.hostname)) return [url.origin];
  return [...LOOPBACK_HOSTS].map((host) => `${url.protocol}//${host}${url.port ? `:${url.port}` : ''}`);
}

export function originRule(publicBaseUrl: string, allowed: readonly string[]): OriginRule {
  const origins = new Set<string>(loopbackAliases(publicBaseUrl));
  for (const a of allowed) {
    const o = canonicalOrigin(a);
    if (o) origins.add(o);
  }
  return {
    allows(origin) {
      if (origin === undefined) return true;
      if (Array.isArray(origin)) return false; // one Origin per request; two is not a browser
      return origins.has(origin.trim());
    },
  };
}
