/**
 * Bounds on how long one client may hold a connection (Node's defaults let a slow body hold it
 * 300 s). The request bound is sized for the largest upload the spec allows (a 100 MB document
 * sample) at a modest uplink; every value is a setting (HTTP_*_TIMEOUT_MS, see .env.example).
 */
import type { Server } from 'node:http';

export interface HttpTimeouts {
  /** Whole request (headers and body) must arrive within this; otherwise 408 and the socket closes. */
  requestTimeoutMs: number;
  /** Headers must arrive within this. */
  headersTimeoutMs: number;
  /** An idle kept-alive connection is closed after this (set above a load balancer's idle timeout). */
  keepAliveTimeoutMs: number;
}

export function applyHttpTimeouts(server: Server, t: HttpTimeouts): void {
  server.requestTimeout = t.requestTimeoutMs;
  // Node requires headersTimeout <= requestTimeout (0 disables the request bound).
  server.headersTimeout = t.requestTimeoutMs > 0 ? Math.min(t.headersTimeoutMs, t.requestTimeoutMs) : t.headersTimeoutMs;
  server.keepAliveTimeout = t.keepAliveTimeoutMs;
}
