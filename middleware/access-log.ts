/**
 * One structured line per request: method, path (never the query string, which may carry
 * user data), status, duration, request id and project id. Headers are never logged.
 */
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../lib/logger.js';

export function accessLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    // 'close' without 'finish': the client went away before the answer was written (a timeout on
    // its side, a dropped connection); logged so an operator sees requests that were abandoned.
    res.on('close', () => {
      if (res.writableFinished) return;
      logger.warn('request abandoned by the client', {
        method: req.method,
        path: req.path,
        duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
        request_id: req.requestId,
        ...(req.auth ? { project_id: req.auth.project.id } : {}),
      });
    });
    res.on('finish', () => {
      logger.info('request', {
        method: req.method,
        path: req.path,
        status: res.statusCode,
        duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
        request_id: req.requestId,
        ...(req.auth ? { project_id: req.auth.project.id } : {}),
      });
    });
    next();
  };
}
