/**
 * Requests Node's HTTP parser refuses before Express sees them (a URL and headers over 16 KB, a
 * malformed request line or header) are answered in the spec's envelope too: Node's own answer is
 * a bare 431 or 400 with no body, which a generated SDK cannot read. The spec has no 431, so an
 * oversized request is 400 `bad_request` (written into openapi.yaml's description).
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { newRequestId } from '../middleware/request-id.js';

const MESSAGES: Record<string, string> = {
  HPE_HEADER_OVERFLOW: 'The request line and headers exceed 16 KB; send long filters in fewer, shorter parameters.',
};

/** Answers a parser-refused request with the envelope, or closes a socket that cannot be answered. */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  const code = err.code ?? '';
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  // A slow request keeps Node's own answer (http/timeouts.ts); a reset has no one to answer.
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
    return;
  }
  if (!code.startsWith('HPE_')) {
    socket.destroy();
    return;
  }
  const requestId = newRequestId();
  const body = JSON.stringify({
    success: false,
    error: { code: 'bad_request', message: MESSAGES[code] ?? 'The request could not be parsed as HTTP/1.1.' },
    request_id: requestId,
  });
  socket.end(
    'HTTP/1.1 400 Bad Request\r\n' +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

/** The API's HTTP server: Express behind Node's parser, with parser refusals in the envelope. */
export function createHttpServer(app: RequestListener): Server {
  const server = createServer(app);
  server.on('clientError', answerClientError);
  return server;
}
