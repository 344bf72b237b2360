/** The channel number a project sends from: campaigns on one number share its pacing. */
import { queryRows, type Tx } from '../platform/db/tx.js';

export async function phoneNumberIdOf(db: Tx, projectId: string): Promise<string | undefined> {
  const [row] = await queryRows<{ phone_number_id: string }>(db, 'SELECT phone_number_id FROM channel_settings WHERE project_id = $1', projectId);
  return row?.phone_number_id;
}
