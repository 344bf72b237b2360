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
/** The logger's shape used here (the service's winston logger fits). */
type Logger = Record<'info' | 'warn' | 'error', (message: string, meta?: Record<string, unknown>) => unknown>;

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
