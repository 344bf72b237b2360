/** A campaign's progress as the dashboard shows it (http/dashboard/broadcast-pages.ts, progressOf): unknown outcomes are their own reason (issue 34). */
import { describe, expect, it } from '@jest/globals';
import { progressOf } from '../../http/dashboard/broadcast-pages.js';
import type { BroadcastView } from '../../lib/broadcasts/store.js';

const view = (counts: Record<string, number> | null, status = 'completed', status_reason: string | null = null) =>
  ({ id: 'b', name: 'Promo', status, status_reason, recipient_count: 10, scheduled_at: null, counts } as unknown as BroadcastView);
const counts = (unknown: number) => ({ total: 10, queued: 0, held: 0, sent: 10 - unknown, delivered: 0, read: 0, failed: 0, canceled: 0, unknown });

describe('campaign progress in the dashboard', () => {
  it('When sends of a campaign ended with an unknown outcome, then progress names them as their own reason and counts them apart', () => {
    const p = progressOf(view(counts(2)));
    expect(p.reason).toBe("2 sends with an unknown outcome (the channel's answer was lost, or the service stopped before it came): never sent again; a status from the channel settles them");
    expect(p.counts).toMatchObject({ sent: 8, unknown: 2 });
    expect(p.done).toBe(10);
  });

  it('When no outcome is unknown, then no reason is shown; a held campaign keeps its own reason beside an unknown one', () => {
    expect(progressOf(view(counts(0))).reason).toBeNull();
    const held = progressOf(view(counts(1), 'sending', 'daily quota used; sending resumes at 2026-11-24 00:00 UTC or when the quota is raised'));
    expect(held.reason).toBe("daily quota used; sending resumes at 2026-11-24 00:00 UTC or when the quota is raised. 1 send with an unknown outcome (the channel's answer was lost, or the service stopped before it came): never sent again; a status from the channel settles it");
  });
});
