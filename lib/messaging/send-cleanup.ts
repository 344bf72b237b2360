/**
 * Clean-up of a send that did not happen, which must not be lost to a database outage. When a
 * send withdraws its intent (it could not be recorded, or the channel certainly did not send) and
 * that statement fails because PostgreSQL is out of reach, the quota unit would stay taken for
 * the day and the message pending for good (its Idempotency-Key then answers 409 for ever). Such a
 * statement is retried in the background with backoff (1 s doubling to 30 s, for up to an hour)
 * until it succeeds. Left open: a crash in that window still loses it; and a statement that
 * committed but whose answer was lost is run again, giving the unit back twice (the count errs by
 * one in the project's favour), a much narrower window than the outage it covers.
 */
import type pg from 'pg';

/** The logger's shape used here (the service's winston logger fits). */
type Logger = Record<'info' | 'warn' | 'error', (message: string, meta?: Record<string, unknown>) => unknown>;

/**
 * The intent could not be recorded, or recording it may have committed with its answer lost: the
 * pending message goes if it exists, and the quota unit comes back either way, in one statement.
 */
export async function withdrawSend(pool: pg.Pool, projectId: string, ref: string, day: string): Promise<void> {
  await pool.query({
    name: 'withdraw-send',
    text: `WITH gone AS (DELETE FROM messages WHERE project_id = $1 AND client_ref = $2 AND status = 'pending' RETURNING 1)
           UPDATE send_counters SET count = count - 1 WHERE project_id = $1 AND day = $3::date AND count > 0`,
    values: [projectId, ref, day],
  });
}

const FIRST_DELAY_MS = 1000;
const MAX_DELAY_MS = 30_000;
const GIVE_UP_AFTER_MS = 3600_000;

export function settleLater(what: string, run: () => Promise<unknown>, logger: Logger, context: Record<string, unknown> = {}): void {
  const started = Date.now();
  let delay = FIRST_DELAY_MS;
  logger.warn(`${what} failed; retrying in the background`, context);
  const attempt = () => {
    run().then(
      () => logger.info(`${what} done after retrying`, context),
      (e) => {
        if (Date.now() - started > GIVE_UP_AFTER_MS) {
          logger.error(`${what} still failing after an hour; given up`, { ...context, error: String(e) });
          return;
        }
        delay = Math.min(delay * 2, MAX_DELAY_MS);
        setTimeout(attempt, delay).unref();
      },
    );
  };
  setTimeout(attempt, delay).unref();
}
