/**
 * A wait in a line that gives up: the waiter stands in `line` until whoever frees what it waits
 * for takes it off the front and calls it with what it gets, or until `ms` pass, when it leaves
 * the line and gets `gaveUp`. (Slots in lib/platform/fair-shares.ts; the bot runtime's given-back
 * sandboxes, lib/bot/runtime.ts.)
 */
export function waitInLine<T>(line: Array<(got: T) => void>, ms: number, gaveUp: T): Promise<T> {
  return new Promise((resolve) => {
    const wake = (got: T) => {
      clearTimeout(timer);
      resolve(got);
    };
    const timer = setTimeout(() => {
      const at = line.indexOf(wake);
      if (at >= 0) line.splice(at, 1);
      resolve(gaveUp);
    }, ms);
    line.push(wake);
  });
}
