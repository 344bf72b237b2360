/**
 * The MCP revisions /mcp speaks and which era a request belongs to. Dual-era (MCP 2026-07-28,
 * "Versioning"): the legacy revisions (2025-11-25 and earlier, an `initialize` handshake) are the
 * SDK's; the modern one (2026-07-28, every request carrying its version in `_meta` and in the
 * `MCP-Protocol-Version` header) is served by http/mcp/modern.ts.
 */
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';

export const MODERN_VERSION = '2026-07-28';
export const MODERN_VERSIONS: readonly string[] = [MODERN_VERSION];
export const LEGACY_VERSIONS: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;
/** Newest first, as `server/discover` and the UnsupportedProtocolVersion error list them. */
export const SUPPORTED_VERSIONS: readonly string[] = [...MODERN_VERSIONS, ...LEGACY_VERSIONS];

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

/** The version `_meta` names, when the body is one request carrying it. */
export function metaVersion(body: unknown): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const params = (body as { params?: unknown }).params;
  if (!params || typeof params !== 'object') return undefined;
  const meta = (params as { _meta?: unknown })._meta;
  return meta && typeof meta === 'object' ? (meta as Record<string, unknown>)[META_PROTOCOL_VERSION] : undefined;
}

/**
 * Whether the header alone says this is not a legacy request: a version the SDK does not know
 * (2026-07-28, or one nobody supports, answered -32022 by the modern path). No header is legacy:
 * 2025-06-18 says to take it as 2025-03-26.
 */
export function modernHeader(header: string | string[] | undefined): boolean {
  return header !== undefined && !(typeof header === 'string' && LEGACY_VERSIONS.includes(header));
}

/**
 * A request is served as 2026-07-28 when its header is not a legacy version, or when its `_meta`
 * names a version the header does not (then the modern path answers HeaderMismatch, -32020). A
 * legacy client sends no per-request `_meta` version and a legacy header (or none), and is the SDK's.
 */
export function isModern(header: string | string[] | undefined, body: unknown): boolean {
  if (modernHeader(header)) return true;
  const v = metaVersion(body);
  if (v === undefined || v === header) return false;
  // No header and a handshake version in _meta: a legacy client's own metadata, which the SDK ignores.
  return !(header === undefined && typeof v === 'string' && LEGACY_VERSIONS.includes(v));
}
