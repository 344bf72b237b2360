/**
 * "Last used" of API keys and access tokens, for the dashboard. Writing on every request would put a
 * row update on the hot path, so each instance writes a credential's time at most once per `everyMs`
 * (default a minute), without waiting for it: the request never waits on this write, and a failed
 * write is logged and retried at the next request after the interval. Several instances may each
 * write once a minute; the column only moves forward.
 */
import type { Deps } from '../deps.js';
import { recordKeyUse } from './keys.js';
import { recordTokenUse } from './connections.js';

const MAX_TRACKED = 10_000;

type UsageDeps = Pick<Deps, 'db' | 'clock' | 'logger'>;

function usageRecorder(deps: UsageDeps, what: string, record: (db: UsageDeps['db'], id: string, now: Date) => Promise<void>, everyMs: number) {
  const lastWritten = new Map<string, number>();
  return {
    /** Records that the credential authenticated a request now. Resolves when the write (if any) is done. */
    touch(id: string): Promise<void> {
      const now = deps.clock.now();
      const last = lastWritten.get(id);
      if (last !== undefined && now.getTime() - last < everyMs) return Promise.resolve();
      if (lastWritten.size >= MAX_TRACKED) lastWritten.clear();
      lastWritten.set(id, now.getTime());
      return record(deps.db, id, now)
        .then(() => undefined, (e) => {
          lastWritten.delete(id);
          deps.logger.warn(`${what} last-used not recorded`, { error: String(e) });
        });
    },
  };
}

export function keyUsageRecorder(deps: UsageDeps, everyMs = 60_000) {
  return usageRecorder(deps, 'API key', recordKeyUse, everyMs);
}

/** The same for agents' access tokens (`mcp_at_`): the dashboard's connected agents show it. */
export function tokenUsageRecorder(deps: UsageDeps, everyMs = 60_000) {
  return usageRecorder(deps, 'access token', recordTokenUse, everyMs);
}
