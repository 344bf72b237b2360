/**
 * Standalone simulator: `npm run simulator`.
 *   SIMULATOR_PORT (default 4010), SIMULATOR_HOST (default 127.0.0.1),
 *   SIMULATOR_PUBLIC_URL (base URL for media download links; default from the request Host),
 *   SIMULATOR_AUTO_STATUS=off | "<delivered_ms>,<read_ms>" (default 300,1000),
 *   SIMULATOR_TEMPLATE_AUTO_APPROVE_MS (default 3000; "off" waits for the control API),
 *   SIMULATOR_STATUS_BATCH_MS (default 20; statuses of a number within it share a notification; 0: one each),
 *   SIMULATOR_CALLBACK_RETRY_SCALE (default 1: a failed callback is retried like Meta, with decreasing
 *     frequency for 7 days; 0.001 compresses that to 10 minutes),
 *   SIMULATOR_DATA_DIR (default .data/simulator: numbers, templates, media and owed statuses survive a restart; "off" keeps nothing),
 *   SIMULATOR_LOG=debug|info|warn|error (default info).
 */
import { createSimulator, DEFAULT_AUTO_STATUS_DELAYS, type AutoStatusDelays, type SimLogger } from './app.js';
import { metaCallbackRetryDelaysMs } from './state.js';

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;

function makeLogger(level: string): SimLogger {
  const min = Math.max(0, LEVELS.indexOf(level as (typeof LEVELS)[number]));
  const out: SimLogger = {};
  LEVELS.forEach((l, i) => {
    if (i >= min) out[l] = (msg, meta) => console[l === 'debug' ? 'log' : l](`${new Date().toISOString()} ${l} ${msg}${meta ? ' ' + JSON.stringify(meta) : ''}`);
  });
  return out;
}

function parseDelays(v: string | undefined): AutoStatusDelays | null {
  if (!v) return DEFAULT_AUTO_STATUS_DELAYS;
  if (v === 'off') return null;
  const [d, r] = v.split(',').map((x) => (x.trim() === 'off' ? null : Number(x)));
  if (d !== null && !Number.isFinite(d)) throw new Error(`SIMULATOR_AUTO_STATUS: bad value "${v}"`);
  return { sent: 0, delivered: d ?? null, read: r === undefined ? DEFAULT_AUTO_STATUS_DELAYS.read : r };
}

const port = Number(process.env.SIMULATOR_PORT ?? 4010);
const host = process.env.SIMULATOR_HOST ?? '127.0.0.1';
const approve = process.env.SIMULATOR_TEMPLATE_AUTO_APPROVE_MS ?? '3000';
const logger = makeLogger(process.env.SIMULATOR_LOG ?? 'info');

const sim = createSimulator({
  autoStatusDelaysMs: parseDelays(process.env.SIMULATOR_AUTO_STATUS),
  templateAutoDecisionMs: approve === 'off' ? null : Number(approve),
  limits: {
    statusBatchMs: Number(process.env.SIMULATOR_STATUS_BATCH_MS ?? 20),
    callbackRetryDelaysMs: metaCallbackRetryDelaysMs(Number(process.env.SIMULATOR_CALLBACK_RETRY_SCALE ?? 1)),
  },
  publicBaseUrl: process.env.SIMULATOR_PUBLIC_URL,
  dataDir: process.env.SIMULATOR_DATA_DIR === 'off' ? undefined : (process.env.SIMULATOR_DATA_DIR ?? '.data/simulator'),
  logger,
});

const server = sim.app.listen(port, host, () => {
  const addr = server.address();
  const p = typeof addr === 'object' && addr ? addr.port : port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${p}`;
  console.log(`WhatsApp Cloud API simulator listening on ${url}`);
  console.log(`  Graph API base URL: ${url}/v26.0   control API: ${url}/_sim (see simulator/README.md)`);
});
server.keepAliveTimeout = 65_000;
server.on('error', (e: NodeJS.ErrnoException) => {
  console.error(e.code === 'EADDRINUSE' ? `Port ${port} is in use: set SIMULATOR_PORT to another port.` : `Simulator failed to start: ${e.message}`);
  process.exit(1);
});

let stopping = false;
async function stop(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info?.(`simulator: ${signal}, shutting down`);
  await sim.close();
  server.closeAllConnections();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
