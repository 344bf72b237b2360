/**
 * Spans where no instrumentation library sees the work (Graph calls by operation, jobs, the bot's
 * helper calls), and the ids log lines carry. Tracing is on only when the process was started
 * with the tracing bootstrap and `OTEL_EXPORTER_OTLP_ENDPOINT` (docs/traces.md); off, `withSpan`
 * is a plain call and `traceIds` answers nothing: no span object, no context lookup.
 */
import { SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';

const ON = Symbol.for('messaging-service.tracing');

/** Called once by the SDK bootstrap (sdk.ts), after its tracer provider is registered. */
export function markTracingOn(): void {
  (globalThis as Record<symbol, unknown>)[ON] = true;
}

export function tracingOn(): boolean {
  return (globalThis as Record<symbol, unknown>)[ON] === true;
}

/** Runs `fn` inside a span named `name` (its error recorded), or just runs it when tracing is off. */
export function withSpan<T>(name: string, attributes: Attributes, fn: (span?: Span) => Promise<T>): Promise<T> {
  if (!tracingOn()) return fn();
  return trace.getTracer('messaging-service').startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (e) {
      span.recordException(e instanceof Error ? e : String(e));
      span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
      throw e;
    } finally {
      span.end();
    }
  });
}

/** The active span's trace and span ids, for log lines; undefined when tracing is off or no span is active. */
export function traceIds(): { trace_id: string; span_id: string } | undefined {
  if (!tracingOn()) return undefined;
  const ctx = trace.getActiveSpan()?.spanContext();
  return ctx ? { trace_id: ctx.traceId, span_id: ctx.spanId } : undefined;
}

/** The server span of each request being served (tracing on only). */
const requestSpans = new WeakMap<object, Span>();

/** At the start of a request: names its id on its server span, so a trace is found from a log line's request id. */
export function tagRequest(req: object, requestId: string): void {
  if (!tracingOn()) return;
  const span = trace.getActiveSpan();
  if (!span) return;
  span.setAttribute('request.id', requestId);
  requestSpans.set(req, span);
}

/** Once the contract has matched the request: its server span is named by the route and operation (`POST /v1/messages`). */
export function nameRequest(req: object, method: string, route: string, operationId: string): void {
  const span = tracingOn() ? requestSpans.get(req) : undefined;
  if (!span) return;
  span.updateName(`${method} ${route}`);
  span.setAttribute('http.route', route);
  span.setAttribute('operation.id', operationId);
}
