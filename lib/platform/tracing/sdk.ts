/**
 * The OpenTelemetry SDK, started by preload.ts only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set
 * (docs/traces.md). Spans leave in batches over OTLP/HTTP (JSON) to `<endpoint>/v1/traces`; the
 * standard OTEL_* variables (service name, resource attributes, sampler, headers) apply.
 *
 * What is traced: incoming HTTP (the server span, named by the Express route), every PostgreSQL
 * statement (pg: the service's pools and Prisma's, whose driver adapter runs on pg), outgoing HTTP
 * (the Graph client's calls, webhook deliveries, the bot's fetches), Redis commands (node-redis's
 * own diagnostics channels: the contrib instrumentation knows only node-redis 4), and by hand
 * (spans.ts) each Graph call by operation, each job run and each bot helper call.
 *
 * The service is ES modules: express, pg and the rest are imported, not required, so the loader
 * hook of import-in-the-middle is registered first, limited to the modules an instrumentation
 * names (others load untouched).
 */
import { register } from 'node:module';
import diagnostics from 'node:diagnostics_channel';
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { SpanKind, SpanStatusCode, context, type Span } from '@opentelemetry/api';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { markTracingOn } from './spans.js';
import { traceResourceAttributes } from '../instance.js';

const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);

const provider = new NodeTracerProvider({
  // service.name and service.instance.id (which instance answered; lib/platform/instance.ts).
  resource: resourceFromAttributes(traceResourceAttributes()),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter(), { scheduledDelayMillis: 1000 })],
});
provider.register();

/** Probes and scrapes are not traced: a load balancer's every few seconds would drown the rest. */
const UNTRACED = new Set(['/healthz', '/readyz', '/metrics']);

registerInstrumentations({
  tracerProvider: provider,
  instrumentations: [
    new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => UNTRACED.has((req.url ?? '').split('?')[0]) }),
    // Route handlers only: a span per middleware layer would bury the statements.
    new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE, ExpressLayerType.ROUTER] }),
    // Statements inside a request, job or helper call; never bound values. Idle pool work (LISTEN,
    // the job runner's polling outside a job) has no parent and is left out.
    new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false, ignoreConnectSpans: true }),
  ],
});
traceRedis();
await waitForAllMessagesAcknowledged();
markTracingOn();

// The service ends with process.exit after its own shutdown; spans still in the batch leave first
// (at most 2 s, inside the 10 s a container stop allows).
const exit = process.exit.bind(process);
process.exit = ((code?: number) => {
  const timer = setTimeout(() => exit(code), 2000);
  void provider.shutdown().finally(() => {
    clearTimeout(timer);
    exit(code);
  });
}) as typeof process.exit;

/** node-redis 5+ publishes each command on a tracing channel: one client span per command (its name only, never keys or values). */
function traceRedis(): void {
  const tracer = provider.getTracer('node-redis');
  type Ctx = { command?: string; args?: string[]; serverAddress?: string; serverPort?: number; span?: Span; error?: unknown };
  for (const name of ['node-redis:command', 'node-redis:batch']) {
    diagnostics.tracingChannel<Ctx>(name).subscribe({
      start(ctx) {
        ctx.span = tracer.startSpan(
          ctx.command ? `redis ${ctx.command}` : 'redis batch',
          {
            kind: SpanKind.CLIENT,
            attributes: {
              'db.system': 'redis',
              ...(ctx.command ? { 'db.operation.name': ctx.command } : {}),
              ...(ctx.serverAddress ? { 'server.address': ctx.serverAddress } : {}),
              ...(ctx.serverPort ? { 'server.port': ctx.serverPort } : {}),
            },
          },
          context.active(),
        );
      },
      // A command that throws before it is queued ends here (error, then end, no asyncEnd).
      end(ctx) {
        if (ctx.error !== undefined) ctx.span?.end();
      },
      asyncStart() {},
      asyncEnd(ctx) {
        ctx.span?.end();
      },
      error(ctx) {
        ctx.span?.setStatus({ code: SpanStatusCode.ERROR, message: ctx.error instanceof Error ? ctx.error.message : String(ctx.error) });
      },
    });
  }
}
