/**
 * Where a webhook may point, by the outbound-address policy (lib/platform/net/public-address.ts): an
 * absolute `https` URL of at most 512 characters without credentials, whose host resolves only to
 * public addresses. Checked at registration (400 `invalid_webhook_url` for the URL's form, 400
 * `webhook_target_forbidden` for where it leads) and again before every delivery attempt, where
 * the connection then goes to the address that was checked. DEV_ALLOW_PRIVATE_TARGETS lifts the
 * address rule and allows plain http to loopback, for local development and tests only.
 */
import { ApiError } from '../platform/errors.js';
import { UnsafeTargetError, checkUrl, resolveTarget } from '../platform/net/public-address.js';

export const MAX_WEBHOOK_URL_LENGTH = 512;
/** DNS answers slower than this count as "does not resolve". */
export const RESOLVE_TIMEOUT_MS = 5000;

export interface ResolvedTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

function withTimeout<T>(p: Promise<T>, ms: number, host: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new UnsafeTargetError('unresolvable', `Host "${host}" did not resolve within ${ms} ms.`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Checks form and address; throws UnsafeTargetError. */
export async function resolveWebhookTarget(raw: string, allowPrivate: boolean, resolveTimeoutMs = RESOLVE_TIMEOUT_MS): Promise<ResolvedTarget> {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) {
    throw new UnsafeTargetError('invalid_url', `The URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters.`);
  }
  const url = checkUrl(raw, { allowPrivate, allowHttp: false });
  const { address, family } = await withTimeout(resolveTarget(url.hostname, { allowPrivate }), resolveTimeoutMs, url.hostname);
  return { url, address, family };
}

/** Registration-time check with the API's codes; returns the URL as given. */
export async function validateWebhookUrl(raw: unknown, allowPrivate: boolean): Promise<string> {
  if (typeof raw !== 'string' || raw.trim() !== raw || raw === '') {
    throw new ApiError('invalid_webhook_url', 'url must be an absolute https URL without surrounding spaces.');
  }
  try {
    await resolveWebhookTarget(raw, allowPrivate);
    return raw;
  } catch (e) {
    if (!(e instanceof UnsafeTargetError)) throw e;
    const message = e.message + devHint(e.reason, raw, allowPrivate);
    if (e.reason === 'private_address' || e.reason === 'unresolvable') {
      throw new ApiError('webhook_target_forbidden', message, { reason: e.reason });
    }
    throw new ApiError('invalid_webhook_url', message, { reason: e.reason });
  }
}

/**
 * A receiver on this machine (http://localhost:…) is what a developer tries first: a refusal that
 * the development setting would lift names it, so nobody has to find it in the README.
 */
function devHint(reason: UnsafeTargetError['reason'], raw: string, allowPrivate: boolean): string {
  if (reason === 'private_address' && !allowPrivate) {
    return ' For local development and tests, DEV_ALLOW_PRIVATE_TARGETS=true allows private and loopback receivers (never in production).';
  }
  if (reason === 'scheme' && /^http:/i.test(raw)) {
    return allowPrivate
      ? ' Plain http goes only to a loopback host (localhost, 127.0.0.1, ::1) under DEV_ALLOW_PRIVATE_TARGETS.'
      : ' Plain http is accepted only to a loopback host (localhost, 127.0.0.1, ::1) with DEV_ALLOW_PRIVATE_TARGETS=true, for local development and tests (never in production).';
  }
  return '';
}
