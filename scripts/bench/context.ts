/** What every benchmark section gets: the running service, its operator API and the baseline. */
export interface BenchContext {
  /** The service, started like `npm start` (embedded PostgreSQL, bundled simulator), limits raised. */
  base: string;
  /** The Cloud API simulator the service calls (its own process). */
  simulatorUrl: string;
  /** Process ids, to measure CPU use (the embedded PostgreSQL runs under the service). */
  pids: { service: number; simulator: number; bare: number };
  /** A bare Express endpoint, the baseline. */
  bareUrl: string;
  adminToken: string;
  /** A superuser URL of the bench's PostgreSQL (the embedded server's, or DATABASE_URL), for sections that make databases of their own. */
  databaseUrl?: string;
  /** Seconds per measured run (BENCH_DURATION). */
  duration: number;
  /** Calls the operator API; throws on failure; returns `data`. */
  admin(method: string, path: string, body?: object): Promise<any>;
  /** A project connected to a simulated number with a key of these scopes and a raised quota. */
  project(scopes: string[]): Promise<{ id: string; key: string; phoneNumberId: string }>;
}

/** One section of `npm run bench`; it prints its own table and goal lines. */
export type BenchSection = (ctx: BenchContext) => Promise<void>;

/** Each phone writes "hi" to the number, so that its 24-hour window is open for free-form sends. */
export async function openWindows(ctx: BenchContext, phoneNumberId: string, phones: string[]): Promise<void> {
  for (const from of phones) {
    const res = await fetch(`${ctx.simulatorUrl}/_sim/inbound`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ phone_number_id: phoneNumberId, from, text: 'hi' }),
    });
    if (!res.ok) throw new Error(`inbound failed: ${res.status}`);
  }
}
