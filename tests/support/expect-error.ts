/** The spec's error envelope, as every refusal must answer it. */
import { expect } from '@jest/globals';
import type { Response } from 'supertest';

/** `res` is the envelope with this status and code, `success: false`, and the request id of its X-Request-Id. */
export function expectError(res: Response, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(res.body.success).toBe(false);
  expect(res.body.request_id).toBe(res.headers['x-request-id']);
}
