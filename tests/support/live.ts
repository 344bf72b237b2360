/**
 * The dashboard's live pages read as a browser's EventSource does (http/dashboard/live-stream.ts):
 * a signed-in agent's cookie, and a stream whose text is awaited for what it should carry.
 */
import type request from 'supertest';
import { CookieAccessInfo } from 'cookiejar';

/** A supertest agent's cookies as the Cookie header a browser would send. */
export function cookieOf(agent: request.Agent): string {
  const jar = (agent as unknown as { jar: { getCookies(info: unknown): Array<{ name: string; value: string }> } }).jar;
  return jar.getCookies(CookieAccessInfo.All).map((c) => `${c.name}=${c.value}`).join('; ');
}

export interface LiveStream {
  status: number;
  /** Resolves with the stream's text once it contains `text` (rejects after `ms`). */
  until(text: string | RegExp, ms?: number): Promise<string>;
  /** The text so far. */
  text(): string;
  /** Resolves when the service ends the stream. */
  ended: Promise<void>;
  close(): void;
}

/** Opens `path` of the app listening at `base` as an event stream, with the cookie (and headers) given. */
export async function openStream(base: string, path: string, cookie: string, headers: Record<string, string> = {}): Promise<LiveStream> {
  const controller = new AbortController();
  const res = await fetch(`${base}${path}`, { headers: { cookie, accept: 'text/event-stream', ...headers }, signal: controller.signal });
  let text = '';
  const waiters: Array<() => void> = [];
  let ended: Promise<void> = Promise.resolve();
  if (res.status === 200 && res.body) {
    ended = (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          text += decoder.decode(chunk, { stream: true });
          for (const w of waiters.splice(0)) w();
        }
      } catch {
        /* aborted */
      }
    })();
  } else await res.body?.cancel();
  return {
    status: res.status,
    until: (wanted, ms = 5000) => new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "${String(wanted)}" within ${ms} ms; got: ${text.slice(-800)}`)), ms);
      const check = () => {
        if (typeof wanted === 'string' ? text.includes(wanted) : wanted.test(text)) {
          clearTimeout(timer);
          resolve(text);
        } else waiters.push(check);
      };
      check();
    }),
    text: () => text,
    ended,
    close: () => controller.abort(),
  };
}
