/**
 * The channel's webhook endpoint, outside /v1: `/channel/{projectId}/webhook`. GET answers Meta's
 * verification handshake; POST is accepted only with a valid X-Hub-Signature-256 over the raw
 * body, keyed by the project's app secret (anything else is refused and nothing is stored).
 * Applying a payload is idempotent, so the provider's retries are safe.
 */
import express, { Router, type Request, type Response } from 'express';
import { randomBytes } from 'node:crypto';
import type { AppDeps } from '../http/app-deps.js';
import { ApiError } from '../lib/platform/errors.js';
import { openChannel } from '../lib/channel-settings/settings.js';
import { safeEqual } from '../lib/platform/secrets.js';
import { applyWebhook } from '../lib/messaging/inbound.js';
import { signatureOf } from '../channel/signature.js';

export { signatureOf };

// An unknown project answers exactly like a wrong signature (same status, code, message and the
// same HMAC work), so the unauthenticated endpoint does not tell which project ids exist.
const NO_CHANNEL_SECRET = randomBytes(32).toString('hex');
const WRONG_SIGNATURE = 'Missing or wrong X-Hub-Signature-256.';
const WRONG_VERIFICATION = 'Verification failed: hub.mode must be subscribe and hub.verify_token must match.';

async function channelOf(deps: AppDeps, projectId: string) {
  return /^[a-z0-9][a-z0-9_-]{2,63}$/i.test(projectId) ? openChannel(deps, projectId.toLowerCase()) : undefined;
}

export function channelWebhookRouter(deps: AppDeps): Router {
  const router = Router();

  router.get('/channel/:projectId/webhook', async (req: Request, res: Response) => {
    const channel = await channelOf(deps, String(req.params.projectId));
    const { 'hub.mode': mode, 'hub.verify_token': token, 'hub.challenge': challenge } = req.query;
    const expected = channel?.verifyToken ?? NO_CHANNEL_SECRET;
    if (mode !== 'subscribe' || typeof token !== 'string' || typeof challenge !== 'string' || !safeEqual(token, expected) || !channel) {
      throw new ApiError('invalid_token', WRONG_VERIFICATION);
    }
    res.status(200).type('text/plain').send(challenge.slice(0, 1000));
  });

  router.post(
    '/channel/:projectId/webhook',
    express.raw({ type: () => true, limit: '3mb' }),
    async (req: Request, res: Response) => {
      const channel = await channelOf(deps, String(req.params.projectId));
      const raw: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const given = req.headers['x-hub-signature-256'];
      const expected = signatureOf(channel?.appSecret ?? NO_CHANNEL_SECRET, raw);
      if (typeof given !== 'string' || !safeEqual(given, expected) || !channel) {
        throw new ApiError('invalid_token', WRONG_SIGNATURE);
      }
      let payload: unknown;
      try {
        payload = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new ApiError('invalid_json', 'Webhook body is not valid JSON.');
      }
      const outcome = await applyWebhook(deps, channel, payload);
      if (outcome.retryLater) {
        // A status can overtake our record of the send; the provider retries with backoff.
        res.setHeader('Retry-After', '1');
        throw new ApiError('conflict', 'A status refers to a message not recorded yet; retry later.');
      }
      res.status(200).json({ success: true, data: outcome });
    },
  );
  return router;
}
