/**
 * "Last used" of API keys, for the dashboard. Writing on every request would put a row update on
 * the hot path, so each instance writes a key's time at most once per `everyMs` (default a
 * minute), without waiting for it: the request never waits on this write, and a failed write is
 * logged and retried at the next request after the interval. Several instances may each write
 * once a minute; the column only moves forward.
 */
import type { Deps } from '../deps.js';
import { recordKeyUse } from './keys.js';

const MAX_TRACKED = 10_000;

export function keyUsageRecorder(deps: Pick<Deps, 'db' | 'clock' | 'logger'>, everyMs = 60_000) {
  const lastWritten = new Map<string, number>();
  return {
    /** Records that the key authenticated a request now. Resolves when the write (if any) is done. */
    touch(keyId: string): Promise<void> {
      const now = deps.clock.now();
      const last = lastWritten.get(keyId);
      if (last !== undefined && now.getTime() - last < everyMs) return Promise.resolve();
      if (lastWritten.size >= MAX_TRACKED) lastWritten.clear();
      lastWritten.set(keyId, now.getTime());
      return recordKeyUse(deps.db, keyId, now)
        .then(() => undefined, (e) => {
          lastWritten.delete(keyId);
          deps.logger.warn('API key last-used not recorded', { error: String(e) });
        });
    },
  };
}
