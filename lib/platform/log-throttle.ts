/** One warning line per cause per interval, with the count of those suppressed in between. */
export function createLogThrottle(intervalMs = 10_000): (log: (suppressed: number) => void) => void {
  let last = -Infinity;
  let suppressed = 0;
  return (log) => {
    const t = Date.now();
    if (t - last < intervalMs) {
      suppressed++;
      return;
    }
    last = t;
    const n = suppressed;
    suppressed = 0;
    log(n);
  };
}

// ---------------------------------------------------------------------------------------------------
// In-process store
