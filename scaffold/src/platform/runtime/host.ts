/**
 * The bridge to the service (managed by the platform). The bot runs in an isolated sandbox with
 * no file system, environment or network; every effect goes through these calls, the operations
 * of the host API (their types: ../generated/host-api.ts).
 */
import type { HostArgs, HostOpName, HostResult } from '../generated/host-api.js';

interface HostReference {
  apply(receiver: undefined, args: unknown[], options: object): Promise<string>;
}

declare const __host: HostReference;

export class HelperError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
    this.name = 'HelperError';
  }
}

export async function hostCall<K extends HostOpName>(op: K, args: HostArgs<K>): Promise<HostResult<K>> {
  const text = await __host.apply(undefined, [op, JSON.stringify(args ?? null)], {
    arguments: { copy: true },
    result: { promise: true, copy: true },
  });
  const answer = JSON.parse(text) as { ok: boolean; value?: unknown; error?: { code: string; message: string } };
  if (!answer.ok) throw new HelperError(answer.error?.code ?? 'helper_error', answer.error?.message ?? 'The helper failed.');
  return answer.value as HostResult<K>;
}
