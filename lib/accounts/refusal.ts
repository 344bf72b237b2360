/**
 * A dashboard action refused, with the HTTP status and a message for the person (shown on the
 * page). 502: the channel (WhatsApp) refused or failed the call the action needed.
 */
export class DashboardRefusal extends Error {
  constructor(readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 429 | 502, message: string, readonly retryAfterSeconds?: number) {
    super(message);
    this.name = 'DashboardRefusal';
  }
}
