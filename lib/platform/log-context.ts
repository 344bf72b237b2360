/**
 * The request a piece of work belongs to, so that every log line written while serving it names
 * its request id without each caller passing it (the logger reads it here; middleware/request-id.ts
 * sets it). Work outside a request (jobs, start-up) has none.
 *
 * Only while tracing is on (docs/traces.md): the id then rides in OpenTelemetry's context, which
 * follows every await already. Off, nothing follows the request: on Node 20 a context that follows
 * awaits (AsyncLocalStorage) makes every promise of the process dearer (measured: a request shape of
 * 20 awaits, 10.5 µs of CPU without, 25 µs with), so the lines that name the request are those
 * whose writer passes it (the access log line, the error middleware, idempotency).
 */
import { context, createContextKey } from '@opentelemetry/api';
import { tracingOn } from './tracing/spans.js';

const REQUEST_ID = createContextKey('messaging-service.request_id');

/** Runs `fn` (and, traced, everything it starts) as part of the request `requestId`. */
export function inRequest<T>(requestId: string, fn: () => T): T {
  return tracingOn() ? context.with(context.active().setValue(REQUEST_ID, requestId), fn) : fn();
}

/** The request id of the work under way, if it serves a request (traced processes only). */
export function currentRequestId(): string | undefined {
  return tracingOn() ? (context.active().getValue(REQUEST_ID) as string | undefined) : undefined;
}
