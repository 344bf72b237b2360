/**
 * Re-seals secrets stored before sealed values were bound to their place (`v1.` values, see
 * lib/platform/crypto-box.ts) as `v2.` values, at start-up. Each row is updated only if it still holds the
 * value that was read, so a concurrent write (another instance, an operator) is never overwritten
 * and nothing is lost; a value that does not open is left as it is and reported.
 */
import type { Database } from '../platform/db/database.js';
import { SecretBox } from '../platform/crypto-box.js';
import { channelSecretPlace, replaceSealedChannelSecret } from '../channel-settings/settings.js';
import { replaceSealedWebhookSecret } from '../webhooks/registrations.js';
import { webhookSecretPlace } from '../webhooks/secret-place.js';
import { queryRows } from '../platform/db/tx.js';

const CHANNEL_COLUMNS = ['access_token', 'app_secret', 'verify_token'] as const;

export async function resealLegacySecrets(db: Pick<Database, 'sql'>, box: SecretBox): Promise<{ resealed: number; failed: number }> {
  let resealed = 0;
  let failed = 0;
  const reseal = (sealed: string, place: string): string | undefined => {
    try {
      return box.seal(box.open(sealed, place), place);
    } catch {
      failed++;
      return undefined;
    }
  };
  for (const column of CHANNEL_COLUMNS) {
    const rows = await queryRows<{ project_id: string; v: string }>(db.sql, `SELECT project_id, ${column}_enc AS v FROM channel_settings WHERE ${column}_enc LIKE 'v1.%'`);
    for (const row of rows) {
      const next = reseal(row.v, channelSecretPlace(row.project_id, column));
      if (!next) continue;
      resealed += await replaceSealedChannelSecret(db.sql, row.project_id, column, row.v, next);
    }
  }
  const rows = await queryRows<{ id: string; v: string }>(db.sql, `SELECT id, secret_enc AS v FROM webhook_endpoints WHERE secret_enc LIKE 'v1.%'`);
  for (const row of rows) {
    const next = reseal(row.v, webhookSecretPlace(row.id));
    if (!next) continue;
    resealed += await replaceSealedWebhookSecret(db.sql, row.id, row.v, next);
  }
  return { resealed, failed };
}
