/**
 * A bot's schedule declarations are judged all at once (issue 60, finding 5): every bad schedule,
 * and both the expression and the zone of one, are reported by one deploy, not one per try.
 */
import { describe, expect, it } from '@jest/globals';
import { checkSchedules } from '../../lib/deploy/schedule-rules.js';

describe('checkSchedules', () => {
  it('When several schedules are wrong, some in both their expression and their zone, then every problem is reported at once', () => {
    const { schedules, problems } = checkSchedules({
      good: { cron: '0 9 * * *', timeZone: 'UTC' },
      seconds: { cron: '*/5 * * * * *', timeZone: 'Mars/Olympus' },
      words: { cron: '0 nine * * *', timeZone: 'Europe/Atlantis' },
      zoneOnly: { cron: '0 9 * * *', timeZone: 'Nowhere/Here' },
      cronOnly: { cron: '61 * * * *', timeZone: 'Europe/Lisbon' },
    }, 60);
    expect([...schedules.keys()]).toEqual(['good']);
    expect(problems.map((p) => [p.name, p.field])).toEqual([
      ['seconds', 'cron'], ['seconds', 'timeZone'],
      ['words', 'cron'], ['words', 'timeZone'],
      ['zoneOnly', 'timeZone'],
      ['cronOnly', 'cron'],
    ]);
    expect(problems[0].message).toContain('has 6 fields');
    expect(problems[1].message).toContain('"Mars/Olympus" is not a known IANA time zone');
  });

  it('When every schedule is right, then nothing is reported', () => {
    expect(checkSchedules({ a: { cron: '0 9 * * MON-FRI', timeZone: 'Europe/Lisbon' } }, 60).problems).toEqual([]);
  });
});
