/**
 * The in-process request of a tool call (http/mcp/inject.ts) ends as a request read in full, not
 * as an aborted one: node would otherwise destroy its socket and build an ERR_STREAM_PREMATURE_CLOSE
 * on every tool call (issue 67 item 5, about 30 µs each).
 */
import { describe, expect, it } from '@jest/globals';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { inject } from '../../http/mcp/inject.js';

describe('inject', () => {
  it('When a request with a body is injected and answered, then it is complete, not aborted, its socket is left alone, and the answer is kept', async () => {
    let seen: { aborted: boolean; socketDestroyed: boolean; body: string } | undefined;
    const listener = (req: IncomingMessage, res: ServerResponse) => {
      let aborted = false;
      req.on('aborted', () => (aborted = true));
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ echo: body }));
        // After the request's own destroy (autoDestroy, a tick after 'end') has run.
        setTimeout(() => (seen = { aborted: aborted || req.aborted, socketDestroyed: req.socket.destroyed, body }), 5);
      });
    };
    const answer = await inject(listener, { method: 'POST', url: '/x', headers: { 'content-type': 'application/json' }, payload: '{"a":1}' });
    expect(answer).toMatchObject({ statusCode: 200, payload: JSON.stringify({ echo: '{"a":1}' }) });
    await new Promise((r) => setTimeout(r, 20));
    expect(seen).toEqual({ aborted: false, socketDestroyed: false, body: '{"a":1}' });
  });
});
