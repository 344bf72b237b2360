/** The channel's 24-hour customer-service window, opened by each inbound message: the one rule. */

export const SERVICE_WINDOW_MS = 24 * 60 * 60 * 1000;

/** Whether the window is open at `now`, and when it ends (null before any inbound message). */
export function serviceWindow(lastInboundAt: Date | null | undefined, now: Date): { open: boolean; expiresAt: Date | null } {
  if (!lastInboundAt) return { open: false, expiresAt: null };
  const expiresAt = new Date(lastInboundAt.getTime() + SERVICE_WINDOW_MS);
  return { open: now.getTime() < expiresAt.getTime(), expiresAt };
}

/** Whether a session (free-form) message may be sent at `now`. */
export function windowOpen(lastInboundAt: Date | null | undefined, now: Date): boolean {
  return serviceWindow(lastInboundAt, now).open;
}
