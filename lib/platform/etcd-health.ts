/**
 * The etcd members of a Patroni topology, as the service sees them (issue 71 item 5): each one's
 * `/health` asked with a short bound. A member down is not an outage while a majority answers, but
 * one more is (Patroni then runs on failsafe mode only): it is reported, never a reason to be unready.
 */
export interface EtcdReport {
  members: number;
  members_up: number;
  /** Each member that did not answer healthy within the bound (`/health` false: no quorum, or no answer). */
  members_down: string[];
}

async function healthy(url: string, timeoutMs: number): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    const body = (await res.json()) as { health?: unknown };
    return res.ok && (body.health === 'true' || body.health === true);
  } catch {
    return false;
  }
}

export async function readEtcd(endpoints: string[], timeoutMs = 1000): Promise<EtcdReport> {
  const up = await Promise.all(endpoints.map((e) => healthy(e, timeoutMs)));
  return { members: endpoints.length, members_up: up.filter(Boolean).length, members_down: endpoints.filter((_, i) => !up[i]) };
}
