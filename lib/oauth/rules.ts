/**
 * The OAuth rules that are plain functions of their input: which redirect URIs a client may register
 * (RFC 8252: https, plain http on a loopback host with any port, or a native app's private-use scheme
 * in reverse-domain form, or a known client's, for a public client), the size limits of a registration, how a requested `resource` (RFC 8707) compares with the MCP endpoint's URL, and the
 * scopes a request may name (the catalogue).
 */
import { SCOPES } from '../access/scope-catalogue.js';

/**
 * Registration is open to anyone, so what one address can make us store is bounded three ways: each
 * registration (these sizes, and its stored metadata at most `registrationStored` bytes), how many
 * an address sends (`OAUTH_REGISTRATIONS_PER_HOUR`) and how many bytes (`OAUTH_REGISTRATION_BYTES_PER_DAY`),
 * both in the shared counters (http/oauth.ts). Real clients register one or two loopback or https
 * callbacks of well under 512 characters.
 */
export const LIMITS = {
  clientName: 200,
  redirectUris: 5,
  redirectUri: 512,
  /** The registration's JSON body (bytes). */
  registrationBody: 16 * 1024,
  /** The registered metadata as stored (its JSON, bytes): redirect URIs, name and every other field. */
  registrationStored: 4096,
  /** The authorization request's `state` (characters). */
  state: 1000,
  /** Pending consent: the person has this long to answer. */
  requestSeconds: 600,
  /** An authorization code lives this long. */
  codeSeconds: 60,
  /**
   * A refresh token presented again this long after its rotation (a client's parallel or retried
   * refresh) is answered the pair its rotation produced; later, it is a reuse and revokes its grant.
   */
  refreshGraceSeconds: 30,
} as const;

export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Schemes that are never a native app's private-use scheme (RFC 8252 §7.1): scripts and data, the
 * browser's own, files, mail and telephony, and web sockets. Any other scheme is one an app claims
 * on the person's machine (`cursor://`, `com.example.app:`); registration further requires the
 * reverse-domain form or a known client's scheme (redirectUriProblem).
 */
const NOT_PRIVATE_USE: ReadonlySet<string> = new Set([
  'javascript', 'data', 'vbscript', 'file', 'blob', 'about', 'filesystem', 'view-source', 'ftp', 'ws', 'wss',
  'mailto', 'tel', 'sms', 'urn', 'chrome', 'chrome-extension', 'moz-extension', 'resource', 'intent', 'http', 'https',
  'feed', 'jar', 'ms-settings',
]);

/**
 * Private-use schemes of clients people use that predate RFC 8252's reverse-domain advice, accepted
 * as they are: Cursor (`cursor://anysphere.cursor-mcp/oauth/callback`), Windsurf
 * (`windsurf://codeium.windsurf/mcp/oauth/callback`), VS Code and its Insiders build, Claude's desktop app.
 */
export const KNOWN_APP_SCHEMES: ReadonlySet<string> = new Set(['cursor', 'windsurf', 'vscode', 'vscode-insiders', 'claude']);

/** RFC 8252 §7.1's reverse-domain scheme (`com.example.app`): two or more DNS labels, no `+`. */
const REVERSE_DOMAIN = /^[a-z][a-z0-9-]*(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/;

/** RFC 3986's URI characters: unreserved, reserved, and percent-encoded octets. */
const URI_CHARACTERS = /^(?:[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$/;

/** Whether a redirect URI uses a private-use (custom) scheme, as a native app's deep link does. */
export function isPrivateUseScheme(raw: string): boolean {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(raw)?.[1]?.toLowerCase();
  return scheme !== undefined && !NOT_PRIVATE_USE.has(scheme);
}

/**
 * Why a redirect URI cannot be registered, or undefined when it can (RFC 8252 §7): https; plain http
 * on a loopback host; or, for a public client (no secret: a native app cannot keep one), a private-use
 * scheme in reverse-domain form (`com.example.app:/cb`) or a known client's (KNOWN_APP_SCHEMES) such
 * as Cursor's `cursor://anysphere.cursor-mcp/oauth/callback`. Never a script, data, file or
 * browser-handled scheme, and never a character outside RFC 3986's grammar (a quote or an angle
 * bracket would be markup wherever the URI is shown). A private-use scheme can be claimed by any app
 * on the machine, which is why the code is bound by PKCE (S256, always required here) to the client
 * that began the flow, the URI must match exactly, and the consent page names the app scheme the
 * browser returns to. The same rule holds for client ID metadata documents.
 */
export function redirectUriProblem(raw: string, opts: { publicClient?: boolean } = {}): string | undefined {
  if (raw.length > LIMITS.redirectUri) return `a redirect URI is longer than ${LIMITS.redirectUri} characters`;
  if (!URI_CHARACTERS.test(raw)) {
    const bad = [...raw].find((c, i) => !/[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]/.test(c) || (c === '%' && !/^%[0-9A-Fa-f]{2}/.test(raw.slice(i)))) ?? '%';
    return `a redirect URI may hold only the characters of the URI grammar (RFC 3986), not ${JSON.stringify(bad)}`;
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `"${raw.slice(0, 100)}" is not an absolute URL`;
  }
  if (url.hash || raw.includes('#')) return `a redirect URI must not have a fragment (${url.href.slice(0, 100)})`;
  if (url.username || url.password) return 'a redirect URI must not carry credentials';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  if (url.protocol === 'http:') return `plain http is allowed only for a loopback host (localhost, 127.0.0.1, [::1]); use https for ${url.host}`;
  const scheme = url.protocol.replace(/:$/, '').toLowerCase();
  if (!isPrivateUseScheme(raw)) return `a redirect URI must be https, http on a loopback host, or an app's private-use scheme; not ${scheme}`;
  if (!REVERSE_DOMAIN.test(scheme) && !KNOWN_APP_SCHEMES.has(scheme)) {
    return `an app's private-use scheme must be in reverse-domain form such as com.example.app: (RFC 8252 §7.1) or one of ${[...KNOWN_APP_SCHEMES].join(', ')}; not ${scheme.slice(0, 50)}`;
  }
  if (!opts.publicClient) {
    return `a private-use scheme (${scheme}:) is for a native app, which cannot keep a secret: register it as a public client (token_endpoint_auth_method "none"; PKCE is always required)`;
  }
  return undefined;
}

/** Where the browser returns, as the consent page shows it: the host, or for an app's scheme `the app of cursor:// (anysphere.cursor-mcp)`. */
export function returnHost(redirectUri: string): string {
  try {
    const url = new URL(redirectUri);
    if (url.protocol === 'https:' || url.protocol === 'http:') return url.host;
    return `the app of ${url.protocol}//${url.host ? ` (${url.host})` : ''}`;
  } catch {
    return redirectUri.slice(0, 100);
  }
}

/** The scheme of a private-use redirect URI (`cursor`), or undefined for http(s). */
export function appScheme(redirectUri: string): string | undefined {
  return isPrivateUseScheme(redirectUri) ? redirectUri.slice(0, redirectUri.indexOf(':')).toLowerCase() : undefined;
}

/** What the consent page's CSP form-action needs to let the answer lead there: the origin, or the app's scheme. */
export function redirectOrigin(redirectUri: string): string | undefined {
  const scheme = appScheme(redirectUri);
  if (scheme) return `${scheme}:`;
  try {
    const origin = new URL(redirectUri).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}

/** A resource indicator without its fragment and without one trailing slash, for comparison. */
function comparable(resource: string): string {
  const hash = resource.indexOf('#');
  return (hash === -1 ? resource : resource.slice(0, hash)).replace(/\/$/, '');
}

/**
 * Whether a requested resource names the MCP endpoint (a trailing slash aside). When the endpoint is
 * on a loopback address (development), `localhost`, `127.0.0.1` and `[::1]` with the same scheme,
 * port and path are one service: a client configured with either name is served (its tokens are
 * bound to the canonical URL all the same).
 */
export function sameResource(requested: string | URL, expected: string): boolean {
  let url: URL;
  try {
    url = new URL(String(requested));
  } catch {
    return false;
  }
  const canonical = new URL(expected);
  if (LOOPBACK_HOSTS.has(url.hostname) && LOOPBACK_HOSTS.has(canonical.hostname)) url.hostname = canonical.hostname;
  return comparable(url.href) === comparable(canonical.href);
}

const CATALOGUE: ReadonlySet<string> = new Set(SCOPES);

/** The scope catalogue, as the metadata documents publish it. */
export const SCOPES_SUPPORTED: readonly string[] = SCOPES;

export function isKnownScope(scope: string): boolean {
  return CATALOGUE.has(scope);
}

/** Scopes named in a space-separated list (empty entries dropped, duplicates once). */
export function scopeList(raw: readonly string[] | string | undefined): string[] {
  const parts = typeof raw === 'string' ? raw.split(' ') : (raw ?? []);
  return [...new Set(parts.map((s) => s.trim()).filter((s) => s !== ''))];
}

/**
 * What an agent asks for first (the `scope` of /mcp's 401, which the SDK's client requests): reading
 * conversations, contacts and templates, enough to look around. Anything more is asked for when it is
 * needed, by the step-up challenge of a 403 `insufficient_scope` (middleware/scopes.ts, http/mcp).
 */
export const STARTER_SCOPES: readonly string[] = ['conversations:read', 'contacts:read', 'templates:read'];

/** Read scopes are preselected on the consent page when the client asked for nothing. */
export function isReadScope(scope: string): boolean {
  return scope.endsWith(':read');
}

/** How the consent page groups the catalogue, in this order. */
export const SCOPE_GROUPS = ['read', 'write', 'send', 'manage'] as const;
export type ScopeGroup = (typeof SCOPE_GROUPS)[number];

/** A scope's group: `messages:send` sends; `…:manage` manages; `…:write` writes; reads and event subscriptions read. */
export function scopeGroup(scope: string): ScopeGroup {
  if (scope === 'messages:send') return 'send';
  if (scope.endsWith(':manage')) return 'manage';
  if (scope.endsWith(':write')) return 'write';
  return 'read';
}

/** A code_challenge of S256 is the base64url of a SHA-256: 43 characters. */
export const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
