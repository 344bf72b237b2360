/** A dashboard action refused, with the HTTP status and a message for the person (shown on the page). */
export class DashboardRefusal extends Error {
  constructor(readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 429, message: string, readonly retryAfterSeconds?: number) {
    super(message);
    this.name = 'DashboardRefusal';
  }
}
