/**
 * Which instance answered: the id every metric and span carries (OpenTelemetry's
 * `service.instance.id`; Prometheus label `service_instance_id`). It is INSTANCE_NAME when set
 * (compose.yaml names its instances app1, app2; the same name is on campaign leases), else the host
 * name, the process id and a random suffix (unique even for containers on the host's network, each
 * PID 1). /metrics labels every sample with it in production, and elsewhere only when INSTANCE_NAME
 * is set (one process on a laptop, or a test, needs no label).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';

let fallback: string | undefined;

export function serviceInstanceId(env: NodeJS.ProcessEnv = process.env): string {
  const named = env.INSTANCE_NAME?.trim();
  if (named) return named;
  fallback ??= `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  return fallback;
}

export function metricsInstanceId(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return (env.INSTANCE_NAME?.trim() || env.NODE_ENV === 'production') ? serviceInstanceId(env) : undefined;
}

/** The resource of every span: the service's name (OTEL_SERVICE_NAME) and this instance. */
export function traceResourceAttributes(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return {
    'service.name': env.OTEL_SERVICE_NAME?.trim() || 'messaging-service',
    'service.instance.id': serviceInstanceId(env),
  };
}
