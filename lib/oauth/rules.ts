/**
 * The OAuth rules that are plain functions of their input: which redirect URIs a client may register
 * (RFC 8252: https, or plain http on a loopback host with any port), the size limits of a
 * registration, how a requested `resource` (RFC 8707) compares with the MCP endpoint's URL, and the
 * scopes a request may name (the catalogue).
 */
import { SCOPES } from '../dashboard/scopes.js';

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
} as const;

export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Why a redirect URI cannot be registered, or undefined when it can. */
export function redirectUriProblem(raw: string): string | undefined {
  if (raw.length > LIMITS.redirectUri) return `a redirect URI is longer than ${LIMITS.redirectUri} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `"${raw.slice(0, 100)}" is not an absolute URL`;
  }
  if (url.hash) return `a redirect URI must not have a fragment (${url.href.slice(0, 100)})`;
  if (url.username || url.password) return 'a redirect URI must not carry credentials';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  if (url.protocol === 'http:') return `plain http is allowed only for a loopback host (localhost, 127.0.0.1, [::1]); use https for ${url.host}`;
  return `a redirect URI must be https (or http on a loopback host), not ${url.protocol.replace(/:$/, '')}`;
}

/** The host a person returns to, as the consent page shows it. */
export function returnHost(redirectUri: string): string {
  try {
    return new URL(redirectUri).host;
  } catch {
    return redirectUri.slice(0, 100);
  }
}

/** The origin of a redirect URI (the consent page's CSP lets its form lead there). */
export function redirectOrigin(redirectUri: string): string | undefined {
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

/** Whether a requested resource names the MCP endpoint (a trailing slash aside). */
export function sameResource(requested: string | URL, expected: string): boolean {
  let href: string;
  try {
    href = new URL(String(requested)).href;
  } catch {
    return false;
  }
  return comparable(href) === comparable(new URL(expected).href);
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

/** Read scopes are preselected on the consent page; writes are opt-in. */
export function isReadScope(scope: string): boolean {
  return scope.endsWith(':read');
}

/** A code_challenge of S256 is the base64url of a SHA-256: 43 characters. */
export const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
