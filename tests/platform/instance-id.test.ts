/**
 * Which instance answered (issue 59 item 7; lib/platform/instance.ts): every /metrics sample carries
 * `service_instance_id` (INSTANCE_NAME, or in production the host, process and a random suffix),
 * and every span's resource carries `service.instance.id` — checked on spans a real process exports
 * over OTLP to a collector of this test's own.
 */
import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMetrics } from '../../lib/platform/metrics.js';
import { metricsInstanceId, serviceInstanceId, traceResourceAttributes } from '../../lib/platform/instance.js';

describe('service.instance.id', () => {
  it('When metrics have an instance id, then every sample is labelled with it', async () => {
    const metrics = createMetrics({ instanceId: 'app7' });
    metrics.request('sendMessage', 200, 0.01);
    metrics.send('text', 'sent');
    const text = await metrics.registry.metrics();
    const samples = text.split('\n').filter((l) => l && !l.startsWith('#'));
    expect(samples.length).toBeGreaterThan(20);
    for (const line of samples) expect(line).toMatch(/\{(.*,)?service_instance_id="app7"(,.*)?\} /);
    expect(text).toMatch(/http_requests_total\{[^}]*operation="sendMessage"[^}]*service_instance_id="app7"[^}]*\} 1/);
  });

  it('When INSTANCE_NAME is set, then it is the id; in production without it, a unique one; elsewhere metrics go unlabelled', () => {
    expect(serviceInstanceId({ INSTANCE_NAME: 'app2' })).toBe('app2');
    expect(metricsInstanceId({ INSTANCE_NAME: ' app2 ' })).toBe('app2');
    const made = metricsInstanceId({ NODE_ENV: 'production' });
    expect(made).toMatch(new RegExp(`-${process.pid}-[0-9a-f]{6}$`));
    expect(metricsInstanceId({ NODE_ENV: 'test' })).toBeUndefined();
    expect(traceResourceAttributes({ INSTANCE_NAME: 'app1' })).toEqual({ 'service.name': 'messaging-service', 'service.instance.id': 'app1' });
  });

  it('When a traced process exports spans, then their resource names the instance', async () => {
    const bodies: any[] = [];
    const collector = http.createServer((req, res) => {
      let text = '';
      req.on('data', (c) => { text += c; });
      req.on('end', () => {
        if (req.url === '/v1/traces') bodies.push(JSON.parse(text));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', () => r()));
    const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    // One traced incoming request (an http server span), then exit: the SDK flushes on process.exit.
    const script = `
      import http from 'node:http';
      const s = http.createServer((q, r) => r.end('ok')).listen(0, '127.0.0.1', async () => {
        await fetch('http://127.0.0.1:' + s.address().port + '/hello');
        s.close(); process.exit(0);
      });`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', './lib/platform/tracing/preload.ts', '--input-type=module', '-e', script], {
      env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, INSTANCE_NAME: 'app9', OTEL_SERVICE_NAME: 'messaging-service' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c) => { out += c; });
    child.stderr.on('data', (c) => { out += c; });
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    collector.close();
    expect({ code, out: code === 0 ? '' : out }).toEqual({ code: 0, out: '' });
    const resources = bodies.flatMap((b) => b.resourceSpans ?? []);
    expect(resources.length).toBeGreaterThan(0);
    for (const rs of resources) {
      const attrs = Object.fromEntries((rs.resource?.attributes ?? []).map((a: any) => [a.key, a.value?.stringValue]));
      expect(attrs['service.instance.id']).toBe('app9');
      expect(attrs['service.name']).toBe('messaging-service');
    }
  }, 30_000);
});
