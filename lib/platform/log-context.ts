/**
 * The request a piece of work belongs to, so that every log line written while serving it names
 * its request id without each caller passing it (the logger reads it here; middleware/request-id.ts
 * sets it). Work outside a request (jobs, start-up) has none.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const store = new AsyncLocalStorage<string>();

/** Runs `fn` (and everything it starts) as part of the request `requestId`. */
export function inRequest<T>(requestId: string, fn: () => T): T {
  return store.run(requestId, fn);
}

/** The request id of the work under way, if it serves a request. */
export function currentRequestId(): string | undefined {
  return store.getStore();
}
