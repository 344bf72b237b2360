/**
 * The deadline of one outbound call: its signal aborts the call when the time is up, and
 * `timedOut` then tells that apart from the call failing on its own (each caller words its own
 * timeout error). `clear` once the call is over, so a finished call holds no timer.
 */
export interface CallDeadline {
  readonly signal: AbortSignal;
  readonly timedOut: boolean;
  clear(): void;
}

export function callDeadline(ms: number): CallDeadline {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  return {
    signal: ac.signal,
    // Only the timer aborts it.
    get timedOut() {
      return ac.signal.aborted;
    },
    clear: () => clearTimeout(timer),
  };
}
