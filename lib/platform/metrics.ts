/**
 * Prometheus metrics (prom-client), one registry per service instance (tests run several in one
 * process). Labels are bounded and carry no personal data: operationIds, never raw paths; message
 * types and outcomes, never phone numbers, project keys or contents. Depths (the event outbox, jobs
 * due) are read from PostgreSQL at scrape time, so every instance reports the shared truth; a
 * scrape during an outage still answers (the depth is left out, `service_ready` is 0).
 */
import client from 'prom-client';

export interface Metrics {
  readonly registry: client.Registry;
  /** One answered HTTP request. */
  request(operation: string, status: number, seconds: number): void;
  /** One send through POST /v1/messages (or the engine): its type and outcome (`sent`, or the error code). */
  send(type: string, outcome: string): void;
  /** One Cloud API call: its operation and outcome (`ok`, or the Graph error code / transport cause). */
  graphCall(op: string, outcome: string, seconds: number): void;
  /** One webhook delivery attempt: outcome and the lag from the event to this attempt. */
  delivery(outcome: string, lagSeconds: number): void;
  /** A request refused by a rate limit (`v1`, `runtime`, `auth`). */
  rateLimited(limit: string): void;
  /** One MCP tool call: the tool (an operationId, bounded) and its outcome (`ok`, or the error code). */
  toolCall(tool: string, outcome: string): void;
  /** One `http.fetch` of a project's bot: its outcome (the status class `2xx`…, or the error code) and duration. */
  botFetch(projectId: string, outcome: string, seconds: number): void;
  /**
   * One event a project's deployed bot did not handle: `kind` is how it ended (`error`: it threw;
   * `timeout`, `memory_limit`, `crash`, `startup`: its release could not start); bounded, as the
   * bot log's kinds.
   */
  botFailure(projectId: string, kind: string): void;
  /**
   * One run of a deployed bot on an event on this instance, by the event's kind (`message`,
   * `schedule`, `call`): across instances, the runs show how they share the bots' work.
   */
  botRun(kind: string): void;
  /** Values read at scrape time (queue depths, readiness). */
  onCollect(collect: () => Promise<CollectedGauges>): void;
}

export interface CollectedGauges {
  ready?: boolean;
  outboxPending?: number;
  jobsDue?: number;
  /** How many pieces the HA topology lacks (lib/platform/ha-watch.ts). */
  haMissing?: number;
  /** The largest replay lag of the primary's standbys. */
  replicationLagSeconds?: number;
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LAG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900];

export function createMetrics(opts: { defaultMetrics?: boolean; instanceId?: string } = {}): Metrics {
  const registry = new client.Registry();
  // Which instance answered, on every sample (lib/platform/instance.ts).
  if (opts.instanceId) registry.setDefaultLabels({ service_instance_id: opts.instanceId });
  if (opts.defaultMetrics !== false) client.collectDefaultMetrics({ register: registry });
  const requests = new client.Counter({ name: 'http_requests_total', help: 'HTTP requests by operationId and status', labelNames: ['operation', 'status'], registers: [registry] });
  const latency = new client.Histogram({ name: 'http_request_duration_seconds', help: 'HTTP request latency by operationId', labelNames: ['operation'], buckets: LATENCY_BUCKETS, registers: [registry] });
  const sends = new client.Counter({ name: 'messages_sent_total', help: 'Message sends by type and outcome', labelNames: ['type', 'outcome'], registers: [registry] });
  const graphCalls = new client.Counter({ name: 'graph_calls_total', help: 'Cloud API calls by operation and outcome', labelNames: ['op', 'outcome'], registers: [registry] });
  const graphLatency = new client.Histogram({ name: 'graph_call_duration_seconds', help: 'Cloud API call latency by operation', labelNames: ['op'], buckets: LATENCY_BUCKETS, registers: [registry] });
  const deliveries = new client.Counter({ name: 'webhook_deliveries_total', help: 'Webhook delivery attempts by outcome', labelNames: ['outcome'], registers: [registry] });
  const lag = new client.Histogram({ name: 'webhook_delivery_lag_seconds', help: 'From an event to its delivery attempt', buckets: LAG_BUCKETS, registers: [registry] });
  const toolCalls = new client.Counter({ name: 'mcp_tool_calls_total', help: 'MCP tool calls by tool and outcome', labelNames: ['tool', 'outcome'], registers: [registry] });
  const botFetches = new client.Counter({ name: 'bot_http_fetches_total', help: "Bots' http.fetch calls by project and outcome (status class or error code)", labelNames: ['project', 'outcome'], registers: [registry] });
  const botFetchLatency = new client.Histogram({ name: 'bot_http_fetch_duration_seconds', help: "Bots' http.fetch duration", buckets: LATENCY_BUCKETS, registers: [registry] });
  const botFailures = new client.Counter({ name: 'bot_event_failures_total', help: "Events a project's deployed bot did not handle, by project and kind (error: it threw; timeout, memory_limit, crash, startup)", labelNames: ['project', 'kind'], registers: [registry] });
  const botRuns = new client.Counter({ name: 'bot_event_runs_total', help: "Runs of projects' deployed bots on events on this instance, by event kind (message, schedule, call)", labelNames: ['kind'], registers: [registry] });
  const limited = new client.Counter({ name: 'rate_limit_rejections_total', help: 'Requests refused by a rate limit', labelNames: ['limit'], registers: [registry] });
  const collectors: Array<() => Promise<CollectedGauges>> = [];
  const gather = async (): Promise<CollectedGauges> => {
    const out: CollectedGauges = {};
    for (const c of collectors) Object.assign(out, await c().catch(() => ({})));
    return out;
  };
  let pending: Promise<CollectedGauges> | undefined;
  // One collection per scrape, shared by the gauges below.
  const collectOnce = () => (pending ??= gather().finally(() => setTimeout(() => (pending = undefined), 0)));
  // A gauge read from that collection at each scrape; left as it was when no collector answered for it.
  const collectedGauge = (name: string, help: string, read: (g: CollectedGauges) => number | undefined) =>
    new client.Gauge({
      name, help, registers: [registry],
      async collect() {
        const v = read(await collectOnce());
        if (v !== undefined) this.set(v);
      },
    });
  collectedGauge('service_ready', '1 when PostgreSQL, migrations, jobs and Redis (when configured) are ready', (g) => (g.ready ? 1 : 0));
  collectedGauge('event_outbox_pending', 'Events waiting for their webhook fan-out', (g) => g.outboxPending);
  collectedGauge('jobs_due', 'Background jobs due and not yet running', (g) => g.jobsDue);
  collectedGauge('ha_missing', 'Pieces the high-availability topology lacks (no synchronous standby, a lagging standby, a sentinel down, a Redis master without replica; /readyz names them)', (g) => g.haMissing);
  collectedGauge('replication_lag_seconds', "The largest replay lag of the primary's standbys", (g) => g.replicationLagSeconds);
  // Each request's labelled series, looked up once per operation and status: prom-client
  // otherwise hashes a label object on every increment and observation.
  const perOperation = new Map<string, { latency: ReturnType<typeof latency.labels>; byStatus: Map<number, ReturnType<typeof requests.labels>> }>();
  return {
    registry,
    request: (operation, status, seconds) => {
      let op = perOperation.get(operation);
      if (!op) perOperation.set(operation, (op = { latency: latency.labels(operation), byStatus: new Map() }));
      let counter = op.byStatus.get(status);
      if (!counter) op.byStatus.set(status, (counter = requests.labels(operation, String(status))));
      counter.inc();
      op.latency.observe(seconds);
    },
    send: (type, outcome) => sends.inc({ type, outcome }),
    graphCall: (op, outcome, seconds) => {
      graphCalls.inc({ op, outcome });
      graphLatency.observe({ op }, seconds);
    },
    delivery: (outcome, lagSeconds) => {
      deliveries.inc({ outcome });
      if (lagSeconds >= 0) lag.observe(lagSeconds);
    },
    rateLimited: (limit) => limited.inc({ limit }),
    botFetch: (project, outcome, seconds) => {
      botFetches.inc({ project, outcome });
      botFetchLatency.observe(seconds);
    },
    botFailure: (project, kind) => botFailures.inc({ project, kind }),
    botRun: (kind) => botRuns.inc({ kind }),
    toolCall: (tool, outcome) => toolCalls.inc({ tool, outcome }),
    onCollect: (collect) => collectors.push(collect),
  };
}
