/** The channel number a project sends from: campaigns on one number share its pacing. */
import type { Queryable } from './audience.js';

export async function phoneNumberIdOf(db: Queryable, projectId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ phone_number_id: string }>('SELECT phone_number_id FROM channel_settings WHERE project_id = $1', [projectId]);
  return rows[0]?.phone_number_id;
}
