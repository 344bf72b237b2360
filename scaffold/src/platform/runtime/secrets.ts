/**
 * The project's secrets (managed by the platform): values an operator set (`npm run ops -- secrets
 * set`), such as the token of your shop's API. Read at each call, so a changed secret is seen from
 * the next message without a redeploy. Never log a value: the bot log shows `[secret NAME]` instead.
 */
import { hostCall } from './host.js';

export const secrets = {
  /** The value of the secret `name` (like SHOP_API_TOKEN), or null when the project has none by that name (or, in a preview, when it is production-only). */
  get(name: string): Promise<string | null> {
    return hostCall('secrets.get', { name });
  },
};
