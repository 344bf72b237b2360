/** Logging (managed by the platform): lines go to the project's bot log, readable by the operator. */
import { hostCall } from './host.js';

type Level = 'debug' | 'info' | 'warn' | 'error';

function write(level: Level, parts: unknown[]): void {
  const message = parts.map((p) => (typeof p === 'string' ? p : safeJson(p))).join(' ');
  hostCall('log', { level, message }).catch(() => undefined);
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

export const log = {
  debug: (...parts: unknown[]) => write('debug', parts),
  info: (...parts: unknown[]) => write('info', parts),
  warn: (...parts: unknown[]) => write('warn', parts),
  error: (...parts: unknown[]) => write('error', parts),
};
