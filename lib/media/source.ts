/**
 * A `source_url` fetched into a temporary file for checking (header samples, media). Policy: the
 * download (lib/platform/net/safe-download.ts: public addresses only at every hop, at most 5 redirects, one
 * total time limit) stops at the smaller of `ceiling` and what is left of the key's upload budget;
 * the bytes received are charged to the budget whatever happens; on failure the file is removed
 * and the error mapped to the spec's codes (./errors.ts). DEV_ALLOW_PRIVATE_TARGETS lifts only
 * the address rule.
 */
import type { Deps } from '../deps.js';
import { safeDownload } from '../platform/net/safe-download.js';
import type { UploadBudget } from './budget.js';
import { toUploadError } from './errors.js';
import { TempFileSink, type HeadHook } from './temp-file.js';

export interface FetchedFile {
  file: TempFileSink;
  contentType?: string;
  filename?: string;
}

export async function fetchSource(
  deps: Pick<Deps, 'config'>,
  url: string,
  opts: { ceiling: number; budget?: UploadBudget; what: string; onHead?: HeadHook },
): Promise<FetchedFile> {
  const remaining = opts.budget ? await opts.budget.remaining() : Number.POSITIVE_INFINITY;
  const sink = remaining < opts.ceiling
    ? await TempFileSink.create(remaining, 'budget', opts.onHead, deps.config.uploadTmpDir)
    : await TempFileSink.create(opts.ceiling, 'ceiling', opts.onHead, deps.config.uploadTmpDir);
  try {
    const result = await safeDownload(url, {
      sink,
      allowPrivate: deps.config.devAllowPrivateTargets,
      timeoutMs: deps.config.downloadTimeoutMs,
    });
    await sink.finish();
    return { file: sink, contentType: result.contentType, filename: result.filename };
  } catch (e) {
    await sink.remove();
    throw toUploadError(e, opts.what, opts.budget);
  } finally {
    await opts.budget?.charge(sink.size);
  }
}
