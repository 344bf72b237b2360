/**
 * What a campaign's send needs from its template beyond the variables: each carousel card's header
 * format (the card's link is sent as an image or a video) and the COPY_CODE button's index (the
 * campaign's coupon goes to that button). Read by the campaign's sends (engine.ts) and by its test
 * send (lib/dashboard/test-send.ts), so a test goes out as the campaign does.
 */
import { queryRows, type Tx } from '../platform/db/tx.js';

export interface TemplateShape {
  cardFormats: Array<'image' | 'video'>;
  /** -1 when the template has no COPY_CODE button. */
  copyCodeIndex: number;
}

export async function templateShapeOf(db: Tx, projectId: string, name: string, language: string): Promise<TemplateShape> {
  const rows = await queryRows<{ components: unknown }>(db, 'SELECT components FROM templates WHERE project_id = $1 AND name = $2 AND language = $3', projectId, name, language);
  const of = (components: unknown, type: string): Record<string, any> | undefined =>
    Array.isArray(components) ? components.find((c) => String(c?.type).toUpperCase() === type) : undefined;
  const cards: Array<Record<string, any>> = of(rows[0]?.components, 'CAROUSEL')?.cards ?? [];
  const buttons: Array<Record<string, unknown>> = of(rows[0]?.components, 'BUTTONS')?.buttons ?? [];
  return {
    cardFormats: cards.map((c) => (String(of(c.components, 'HEADER')?.format ?? 'IMAGE').toLowerCase() === 'video' ? 'video' : 'image')),
    copyCodeIndex: buttons.findIndex((x) => String(x.type).toUpperCase() === 'COPY_CODE'),
  };
}
