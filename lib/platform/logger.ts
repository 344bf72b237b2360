/**
 * One winston logger for the process: JSON in production, readable lines otherwise.
 * Never pass secrets, keys or Authorization headers to it.
 */
import { writeSync } from 'node:fs';
import winston from 'winston';
import type TransportStream from 'winston-transport';
import { currentRequestId } from './log-context.js';
import { traceIds } from './tracing/spans.js';

export type Logger = winston.Logger;

/** The process's one batched standard output (created on first use). */
let stdout: ((line: string) => void) | undefined;

/**
 * Standard output, written in batches: lines gather for up to `flushMs` (or 64 KB) and leave in
 * one write, because a write per line is a system call per request. What is pending is written
 * synchronously when the process exits, so only a hard kill can lose the last few milliseconds.
 */
function batchedStdout(flushMs = 25): (line: string) => void {
  let pending: string[] = [];
  let size = 0;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    size = 0;
    process.stdout.write(text);
  };
  process.once('exit', () => {
    clearTimeout(timer);
    if (pending.length) writeSync(1, pending.join(''));
    pending = [];
  });
  return (line) => {
    pending.push(line);
    size += line.length;
    if (size >= 64 * 1024) flush();
    else if (!timer) timer = setTimeout(flush, flushMs).unref();
  };
}

// winston exports its transport base class as `Transport` (its typings call it `transport`, a namespace).
const Transport = (winston as unknown as { Transport: typeof TransportStream }).Transport;

/**
 * A winston transport onto the batched standard output. Its own transport rather than
 * `transports.Stream` over a Writable: that one adds a stream hop and a setImmediate per line
 * (its 'logged' event), which tripled the cost of the access log's line (about 9 µs to 3 µs).
 */
class BatchedStdoutTransport extends Transport {
  private readonly out = (stdout ??= batchedStdout());
  override log(info: { [key: symbol]: unknown }, done: () => void): void {
    this.out(String(info[MESSAGE]) + '\n');
    done();
  }
}

const LEVEL = Symbol.for('level');
const MESSAGE = Symbol.for('message');

/**
 * winston formats every line, then lets each transport drop those under its level: a debug line
 * cost about 2.7 µs with debug off. Lines that no transport would take are dropped before that.
 */
function skipUnwanted(logger: winston.Logger): winston.Logger {
  const write = logger.write.bind(logger) as (info: unknown) => boolean;
  const levels = logger.levels;
  const wanted = (info: { level?: string; [LEVEL]?: string }): boolean => {
    const v = levels[info[LEVEL] ?? info.level ?? ''];
    // Unknown levels and a silent logger: winston's own handling.
    if (v === undefined || logger.silent) return true;
    for (const t of logger.transports) if (!t.silent && levels[t.level ?? logger.level] >= v) return true;
    return false;
  };
  (logger as unknown as { write: (info: unknown) => boolean }).write = (info) => (info && typeof info === 'object' && !wanted(info as { level?: string }) ? true : write(info));
  return logger;
}

/**
 * A line names the request it was written for (`request_id`) when its writer passes it or, with
 * tracing on, whenever it is written while serving one (log-context.ts); traced, it also names the
 * trace and span it belongs to (`trace_id`, `span_id`; docs/traces.md).
 */
const withContext = winston.format((info) => {
  if (info.request_id === undefined) {
    const requestId = currentRequestId();
    if (requestId) info.request_id = requestId;
  }
  const ids = traceIds();
  if (ids) Object.assign(info, ids);
  return info;
});

export function createLogger(opts: { level?: string; json?: boolean; silent?: boolean } = {}): Logger {
  // The service passes its typed config's values (server.ts); other callers get readable lines at info.
  const json = opts.json ?? false;
  const logger = winston.createLogger({
    level: opts.level ?? 'info',
    silent: opts.silent ?? false,
    format: json
      ? winston.format.combine(withContext(), winston.format.timestamp(), winston.format.json())
      : winston.format.combine(
          withContext(),
          winston.format.timestamp({ format: 'HH:mm:ss.SSS' }),
          winston.format.printf(({ timestamp, level, message, ...rest }) => {
            const extra = Object.entries(rest)
              .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
              .join(' ');
            return `${timestamp} ${level} ${message}${extra ? ' ' + extra : ''}`;
          }),
        ),
    transports: [json ? new BatchedStdoutTransport() : new winston.transports.Console()],
  });
  return skipUnwanted(logger);
}
