/**
 * `emit(name, payload)` for a project's bot code: raises a custom event, which the service
 * delivers to the webhooks subscribed to that exact name (`event` = name, `data` = payload).
 *
 * Returns true when the service accepted the event and false otherwise (bad name, platform name,
 * payload too large, unknown or revoked token, service unreachable, timeout). It never throws, so
 * a webhook problem can never break the bot's conversation flow.
 *
 * Configuration: SERVICE_RUNTIME_URL (the service's base URL, e.g. https://api.example.com) and
 * SERVICE_RUNTIME_TOKEN (a runtime token `rt_…` minted through the operator API), or the options.
 */
export interface EmitOptions {
  /** Base URL of the service; default SERVICE_RUNTIME_URL. */
  url?: string;
  /** Runtime token; default SERVICE_RUNTIME_TOKEN. */
  token?: string;
  /** Give up after this long (default 5000 ms). */
  timeoutMs?: number;
}

export async function emit(name: string, payload?: unknown, options: EmitOptions = {}): Promise<boolean> {
  try {
    const base = options.url ?? process.env.SERVICE_RUNTIME_URL;
    const token = options.token ?? process.env.SERVICE_RUNTIME_TOKEN;
    if (!base || !token || typeof name !== 'string' || name.length === 0) return false;
    const body = JSON.stringify({ name, payload: payload === undefined ? null : payload });
    const res = await fetch(`${base.replace(/\/+$/, '')}/runtime/events`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
      body,
      signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
    });
    await res.arrayBuffer().catch(() => undefined);
    return res.status >= 200 && res.status < 300;
  } catch {
    // Unserialisable payload (cycles, BigInt), bad URL, network failure, timeout.
    return false;
  }
}
