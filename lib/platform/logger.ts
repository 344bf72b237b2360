/**
 * One winston logger for the process: JSON in production, readable lines otherwise.
 * Never pass secrets, keys or Authorization headers to it.
 */
import { writeSync } from 'node:fs';
import { Writable } from 'node:stream';
import winston from 'winston';

export type Logger = winston.Logger;

/** The process's one batched standard output (created on first use). */
let stdout: Writable | undefined;

/**
 * Standard output, written in batches: lines gather for up to `flushMs` (or 64 KB) and leave in
 * one write, because a write per line is a system call per request. What is pending is written
 * synchronously when the process exits, so only a hard kill can lose the last few milliseconds.
 */
function batchedStdout(flushMs = 25): Writable {
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
  return new Writable({
    objectMode: true,
    write(info: { [key: symbol]: unknown }, _enc, done) {
      const line = String(info[Symbol.for('message')]) + '\n';
      pending.push(line);
      size += line.length;
      if (size >= 64 * 1024) flush();
      else if (!timer) timer = setTimeout(flush, flushMs).unref();
      done();
    },
  });
}

export function createLogger(opts: { level?: string; json?: boolean; silent?: boolean } = {}): Logger {
  // The service passes its typed config's values (server.ts); other callers get readable lines at info.
  const json = opts.json ?? false;
  return winston.createLogger({
    level: opts.level ?? 'info',
    silent: opts.silent ?? false,
    format: json
      ? winston.format.combine(winston.format.timestamp(), winston.format.json())
      : winston.format.combine(
          winston.format.timestamp({ format: 'HH:mm:ss.SSS' }),
          winston.format.printf(({ timestamp, level, message, ...rest }) => {
            const extra = Object.entries(rest)
              .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
              .join(' ');
            return `${timestamp} ${level} ${message}${extra ? ' ' + extra : ''}`;
          }),
        ),
    transports: [json ? new winston.transports.Stream({ stream: (stdout ??= batchedStdout()) }) : new winston.transports.Console()],
  });
}
