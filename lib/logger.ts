/**
 * One winston logger for the process: JSON in production, readable lines otherwise.
 * Never pass secrets, keys or Authorization headers to it.
 */
import winston from 'winston';

export type Logger = winston.Logger;

export function createLogger(opts: { level?: string; json?: boolean; silent?: boolean } = {}): Logger {
  const json = opts.json ?? process.env.NODE_ENV === 'production';
  return winston.createLogger({
    level: opts.level ?? process.env.LOG_LEVEL ?? 'info',
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
    transports: [new winston.transports.Console()],
  });
}
