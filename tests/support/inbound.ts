/**
 * A customer writes to a project's number: the simulator signs the channel notification and posts
 * it to the app. One copy for every test that needs an incoming message.
 */
import request from 'supertest';
import { expect } from '@jest/globals';
import type { TestApp } from './app.js';

export interface InboundOptions {
  /** The sender's profile name: 'Ada' unless given; null sends none. */
  name?: string | null;
  /** Wait until the bot runtime has handled what the message started (apps made with the bot option). */
  botIdle?: boolean;
}

/**
 * `message` is the text, or the message's own fields (`type` and `object`, `media`, `context`, or
 * `user_id` in place of `from`). Fails unless the app took the notification (200); answers its wamid.
 */
export async function inbound(t: TestApp, phoneNumberId: string, from: string | undefined, message: string | Record<string, unknown>, opts: InboundOptions = {}): Promise<string> {
  const name = opts.name === undefined ? 'Ada' : opts.name;
  const res = await request(t.sim!.url).post('/_sim/inbound').send({
    phone_number_id: phoneNumberId,
    ...(from === undefined ? {} : { from }),
    ...(name === null ? {} : { name }),
    ...(typeof message === 'string' ? { text: message } : message),
  });
  expect({ status: res.status, delivered: res.body.status_code }).toEqual({ status: 200, delivered: 200 });
  if (opts.botIdle) await t.bot!.whenIdle();
  return res.body.wamid as string;
}
