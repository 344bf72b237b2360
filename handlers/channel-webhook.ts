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
import { FairShares } from '../lib/platform/fair-shares.js';

export { signatureOf };

// An unknown project answers exactly like a wrong signature (same status, code, message and the
// same HMAC work), so the unauthenticated endpoint does not tell which project ids exist.
const NO_CHANNEL_SECRET = randomBytes(32).toString('hex');
const WRONG_SIGNATURE = 'Missing or wrong X-Hub-Signature-256.';
const WRONG_VERIFICATION = 'Verification failed: hub.mode must be subscribe and hub.verify_token must match.';

/**
 * Notifications applied at once, in this process: each holds its payload and, soon, a database
 * connection; more than the pool can serve only wait in memory (during a campaign's statuses,
 * about 200 held 40 MB). So at most half the platform pool's connections apply notifications, and
 * the rest of the pool stays for the API. Between projects (lib/platform/fair-shares.ts): a share
 * each (at most a quarter of the pool, less as more projects send), the fewest-holding project
 * first, a reserve for projects holding none; and a busy project borrows the slots the others
 * leave idle, so with many projects sending a few each, the one at 50 a second is not held to one
 * notification at a time. A freed slot goes to another project within its share first. A notification over the limit waits before its body is read, so it holds a socket,
 * not a payload. Past the wait, 503 with Retry-After: the channel retries.
 */
export function notificationShares(poolMax: number): { total: number; perProject: number } {
  return { total: Math.max(1, Math.ceil(poolMax / 2)), perProject: Math.max(1, Math.ceil(poolMax / 4)) };
}
const NOTIFICATION_WAIT_MS = 30_000;

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

  const shares = notificationShares(deps.db.pool.options.max ?? deps.config.databasePoolMax);
  // Borrowing: a busy project uses the slots the others leave idle (the reserve stays theirs).
  const applying = new FairShares(shares.total, shares.perProject, undefined, { borrowUpTo: shares.total });
  router.post(
    '/channel/:projectId/webhook',
    (req, res, next) => {
      const project = String(req.params.projectId).toLowerCase();
      // The slot is given back when the answer is written or the caller has gone (also while it waited).
      let held = false;
      let gone = false;
      res.once('close', () => {
        gone = true;
        if (held) applying.release(project);
      });
      applying.acquire(project, NOTIFICATION_WAIT_MS, { reserve: true }).then((granted) => {
        if (!granted) return next(new ApiError('service_unavailable', 'Too many notifications are being applied; retry later.', undefined, { 'Retry-After': '1' }));
        if (gone) return applying.release(project);
        held = true;
        next();
      }, next);
    },
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
