/**
 * Retargeting (`auto_retarget_quality`): recipients that failed with the channel's per-user
 * marketing limit (131049) are worth one more try about 24 hours later (Meta's advice). When a
 * completed parent's `retarget_due_at` comes, they are gathered into one follow-up broadcast,
 * re-checked first: still opted in (MARKETING), not opted out, and no message from them since
 * the parent was sent (a customer who wrote back is in a conversation now). The follow-up is
 * frozen at once (its audience is exactly those recipients) and waits in `pending_approval` like
 * any campaign. At most one follow-up per broadcast: `retarget_count` is capped at 1 and a unique
 * index on `retarget_parent_id` makes a second one impossible, even from two engines at once.
 */
import { randomUUID } from 'node:crypto';
import type { Database } from '../platform/db/database.js';
import { execute, queryRows } from '../platform/db/tx.js';
import { RECIPIENT_ERROR_CODE_SQL } from './store.js';
import { preflightOf } from './audience.js';
import { insertRetargetChild, lockDueRetargetParent, settleRetarget } from './campaigns.js';
import { insertRecipientsSql } from './recipients.js';
import { inTransaction } from '../platform/db/transaction.js';

export async function spawnDueRetargets(db: Pick<Database, 'pool'>, now: Date): Promise<string[]> {
  const spawned: string[] = [];
  for (;;) {
    // One parent per transaction: 'none' when no parent is due, else the child made (or null).
    const step = await inTransaction(db.pool, async (client): Promise<string | null | 'none'> => {
      const parent = await lockDueRetargetParent(client, now);
      if (!parent) return 'none';
      const childId = randomUUID();
      const candidates = `
        SELECT r.contact_id, r.phone, r.user_id, r.variables FROM broadcast_recipients r JOIN broadcasts b ON b.id = r.broadcast_id
        LEFT JOIN messages m ON m.project_id = b.project_id AND m.send_ref = r.send_ref
        JOIN contacts c ON c.project_id = b.project_id AND (c.phone = r.phone OR c.user_id = r.user_id)
        LEFT JOIN conversations cv ON cv.project_id = b.project_id AND cv.contact_id = c.id
        WHERE r.broadcast_id = $1 AND ${RECIPIENT_ERROR_CODE_SQL} = 131049
          AND c.opted_out_at IS NULL AND ($2 <> 'MARKETING' OR c.opted_in)
          AND (cv.last_inbound_at IS NULL OR cv.last_inbound_at < $3)`;
      const [count] = await queryRows<{ n: bigint }>(client, `SELECT count(*)::bigint AS n FROM (${candidates}) x`, parent.id, parent.category, parent.started_at);
      const n = Number(count.n);
      if (n === 0) {
        await settleRetarget(client, parent.id, false);
        return null;
      }
      const preflight = preflightOf(n, { opted_out: 0, invalid_phone: 0, not_opted_in: 0, recent_marketing_limit: 0, missing_variable: 0, duplicate: 0 }, 0, now);
      await insertRetargetChild(client, parent.id, childId, preflight, now);
      await execute(
        client,
        insertRecipientsSql(`SELECT $4::uuid, x.contact_id, x.phone, x.user_id, x.variables, 'queued', 1, $5 FROM (${candidates}) x`),
        parent.id, parent.category, parent.started_at, childId, now,
      );
      await settleRetarget(client, parent.id, true);
      return childId;
    });
    if (step === 'none') return spawned;
    if (step) spawned.push(step);
  }
}
