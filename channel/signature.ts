/** Meta's webhook signature: X-Hub-Signature-256 = "sha256=" + hex HMAC-SHA256 of the raw body, keyed by the app secret. */
import { createHmac } from 'node:crypto';

export function signatureOf(appSecret: string, rawBody: Buffer): string {
  return 'sha256=' + createHmac('sha256', appSecret).update(rawBody).digest('hex');
}
