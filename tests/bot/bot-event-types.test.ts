/**
 * The bot's event types have one source (lib/bot/event-types.ts): the scaffold's copy, which a
 * bot's code imports, is generated from it (`npm run generate`), and `generate:check` fails when
 * the copy differs.
 */
import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { scaffoldFiles } from '../../lib/code/scaffold.js';
import { EVENTS_FILE, eventsSource } from '../../scripts/generate-bot-events.js';

describe("the bot's event types", () => {
  it("When the scaffold is read, then its event types are the service's source, word for word", () => {
    const copy = scaffoldFiles().get(EVENTS_FILE.replace(/^scaffold\//, ''));
    expect(copy).toBe(eventsSource());
    expect(copy).toContain('export interface InboundMessage {');
  });

  it('When the check runs on this tree, then the copy is up to date; a changed source would make a different copy', async () => {
    expect(eventsSource('export interface InboundMessage { id: string }\n')).not.toBe(eventsSource());
    const run = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/generate-bot-events.ts', '--check']).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e: { code?: number; stderr?: string }) => ({ code: e.code ?? 1, out: e.stderr ?? '' }),
    );
    expect(run).toEqual({ code: 0, out: `${EVENTS_FILE} is up to date with lib/bot/event-types.ts.\n` });
  }, 30_000);
});
