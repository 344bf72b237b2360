/**
 * One structured line per request: method, path (never the query string, which may carry
 * user data), operationId, status, duration, request id and project id. Headers are never logged.
 * The same request counts in the metrics, by operationId (bounded), never by raw path. A refused
 * or failed request of a project is told to `onProjectError` with its operation, status and error
 * code (lib/access/api-errors.ts counts them for the console's Logs page).
 */
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../lib/platform/logger.js';
import type { Metrics } from '../lib/platform/metrics.js';

const operationOf = (req: Request): string | undefined => (req as { openapi?: { schema?: { operationId?: unknown } } }).openapi?.schema?.operationId as string | undefined;

export type ProjectErrorSink = (projectId: string, operation: string, status: number, code: string) => void;

export function accessLog(logger: Logger, metrics?: Metrics, onProjectError?: ProjectErrorSink) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    // One listener: 'close' follows 'finish' (a tick later) on every answer that was written;
    // 'close' without 'finish' means the client went away before the answer was written (a
    // timeout on its side, a dropped connection), logged so an operator sees abandoned requests.
    res.once('close', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (!res.writableFinished) {
        logger.warn('request abandoned by the client', {
          method: req.method,
          path: req.path,
          duration_ms: ms,
          request_id: req.requestId,
          ...(req.auth ? { project_id: req.auth.project.id } : {}),
        });
        return;
      }
      const operation = operationOf(req);
      metrics?.request(operation ?? 'unmatched', res.statusCode, ms / 1000);
      if (onProjectError && req.auth && res.statusCode >= 400) {
        const code = res.locals.errorCode;
        onProjectError(req.auth.project.id, operation ?? 'unmatched', res.statusCode, typeof code === 'string' ? code : 'unknown');
      }
      // Built in place (no spreads): one object per line, the same fields in the same order.
      const line: Record<string, unknown> = { method: req.method, path: req.path };
      if (operation) line.operation = operation;
      line.status = res.statusCode;
      line.duration_ms = ms;
      line.request_id = req.requestId;
      if (req.auth) line.project_id = req.auth.project.id;
      logger.info('request', line);
    });
    next();
  };
}
