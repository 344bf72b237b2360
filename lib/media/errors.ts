/**
 * One mapping from what can go wrong while receiving a file to the spec's codes:
 * - over the format/kind ceiling or the inline cap → 413 `file_too_large` (details.limit);
 * - over the remaining per-key upload budget → 429 `rate_limited` with Retry-After;
 * - a refused source URL (scheme, credentials, private/loopback/link-local address at any hop)
 *   → 400 `source_url_forbidden`;
 * - a download that fails otherwise (unresolvable host, HTTP status, too many redirects, time limit,
 *   broken or mis-sized body) → 400 `download_failed` with details.reason.
 * Anything else is passed through unchanged.
 */
import { ApiError } from '../platform/errors.js';
import { DownloadError } from '../platform/net/safe-download.js';
import type { UploadBudget } from './budget.js';
import { LimitExceeded } from './temp-file.js';

export function fileTooLarge(limit: number, what: string): ApiError {
  return new ApiError('file_too_large', `The file is larger than ${limit} bytes, the ceiling for ${what}.`, { limit });
}

export function toUploadError(e: unknown, what: string, budget?: UploadBudget): unknown {
  if (e instanceof LimitExceeded) {
    if (e.reason === 'budget' && budget) return budget.exceeded('bytes');
    if (e.reason === 'inline') {
      return new ApiError('file_too_large', `Inline data is at most ${e.limit} bytes decoded; send larger files by source_url.`, { limit: e.limit });
    }
    return fileTooLarge(e.limit, what);
  }
  if (e instanceof DownloadError) {
    if (e.reason === 'forbidden') return new ApiError('source_url_forbidden', `The source URL is not allowed: ${e.message}`, { reason: e.reason });
    return new ApiError('download_failed', `The file could not be downloaded: ${e.message}`, {
      reason: e.reason,
      ...(e.status !== undefined ? { status: e.status } : {}),
    });
  }
  return e;
}
