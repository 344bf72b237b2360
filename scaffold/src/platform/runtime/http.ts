/**
 * Outbound HTTPS (managed by the platform): the bot has no network of its own; the service makes
 * the call for it, to public https hosts only (and the project's allowed hosts, when an operator
 * set a list), with a timeout (5 s by default, at most 15 s, never past the message's deadline),
 * 1 MiB bodies and a rate per project. Never throws: check `ok`, then `status`.
 */
import { hostCall } from './host.js';
import type { HostArgs, HostResult } from '../generated/host-api.js';

export type FetchOptions = Omit<HostArgs<'http.fetch'>, 'url'>;
export type FetchResult = HostResult<'http.fetch'>;

export const http = {
  /**
   * `{ ok: true, status, headers, body }` once the server answered (any status: check it), or
   * `{ ok: false, error: { code, message } }` (`forbidden_target`, `timeout`, `response_too_large`,
   * `rate_limited`, `network_error`, …).
   */
  async fetch(url: string, options: FetchOptions = {}): Promise<FetchResult> {
    try {
      return await hostCall('http.fetch', { url, ...options });
    } catch (e) {
      const error = e as { code?: string; message?: string };
      return { ok: false, error: { code: error.code ?? 'helper_error', message: error.message ?? 'The call failed.' } };
    }
  },
};
