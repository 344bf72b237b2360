import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `fn` every `everyMs` until `ok` holds of its value, or throws after `timeoutMs` naming
 * `what` and the last value. A thrown error is a value too (`ok` sees it): during an outage or a
 * restart a call fails before it succeeds.
 */
export async function eventually<T>(
  fn: () => Promise<T>,
  ok: (v: T) => boolean,
  timeoutMs = 10_000,
  what = 'condition',
  everyMs = 100,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch((e) => e as T);
    if (ok(v)) return v;
    if (Date.now() > until) {
      const last = v instanceof Error ? v.message : JSON.stringify((v as { status?: unknown } | null)?.status ?? v);
      throw new Error(`${what}: not within ${timeoutMs} ms; last value ${last}`);
    }
    await sleep(everyMs);
  }
}
