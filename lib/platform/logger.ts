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
 * winston formats every line, then lets each transport drop those under its level (a debug line
 * cost about 2.7 µs with debug off), and hands each line through two object streams on its way to
 * the transport (about a twentieth of a ping's CPU went to the access line's trip). With the one
 * batched transport this logger is made with, a line is filtered by level first, formatted once
 * and handed to the transport directly: what winston's streams do, without the streams. A logger
 * given other transports, unknown levels and uncaught-exception lines take winston's own path.
 */
function writeDirect(logger: winston.Logger, transport: TransportStream): winston.Logger {
  const write = logger.write.bind(logger) as (info: unknown) => boolean;
  const levels = logger.levels;
  const done = () => {};
  (logger as unknown as { write: (info: unknown) => boolean }).write = (info) => {
    if (!info || typeof info !== 'object' || logger.transports.length !== 1 || logger.transports[0] !== transport) return write(info);
    const line = info as { level?: string; exception?: unknown; [LEVEL]?: string };
    const v = levels[line[LEVEL] ?? line.level ?? ''];
    if (v === undefined || line.exception === true) return write(info);
    if (logger.silent || transport.silent || levels[transport.level ?? logger.level] < v) return true;
    line[LEVEL] ??= line.level;
    const out = logger.format.transform(line as winston.Logform.TransformableInfo, (logger.format as { options?: object }).options);
    if (out) transport.log!(out, done);
    return true;
  };
  return logger;
}

/** The time of day of a readable line (`HH:mm:ss.SSS`, local time) without a date library. */
const timeOfDay = winston.format((info) => {
  const d = new Date();
  const two = (n: number) => (n < 10 ? '0' : '') + n;
  const ms = d.getMilliseconds();
  info.timestamp = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}`;
  return info;
});

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
  const transport = new BatchedStdoutTransport();
  const logger = winston.createLogger({
    level: opts.level ?? 'info',
    silent: opts.silent ?? false,
    format: json
      ? winston.format.combine(withContext(), winston.format.timestamp(), winston.format.json())
      : winston.format.combine(
          withContext(),
          timeOfDay(),
          winston.format.printf(({ timestamp, level, message, ...rest }) => {
            const extra = Object.entries(rest)
              .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
              .join(' ');
            return `${timestamp} ${level} ${message}${extra ? ' ' + extra : ''}`;
          }),
        ),
    // Both formats leave in batches: a write per line was a system call per request (issue 49:
    // the text format's Console transport cost about a tenth of a ping's CPU).
    transports: [transport],
  });
  return writeDirect(logger, transport);
}
