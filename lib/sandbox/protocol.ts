/** The messages between the service's sandbox supervisor and a sandbox process (lib/sandbox/child.ts). */
import type { HostOpBounds, Outcome, SandboxLimits, SourceLocation, StopReason } from './sandbox.js';

/** Service → sandbox process. `sid` names a sandbox, `did` a dispatch, `cid` a helper call. */
export type ParentMessage =
  | { t: 'create'; sid: number; bundle: string; sourceMap?: string; limits: SandboxLimits; ops?: HostOpBounds }
  | { t: 'dispatch'; sid: number; did: number; event: string }
  | { t: 'answer'; cid: number; answer: string }
  | { t: 'dispose'; sid: number }
  /** Stop these sandboxes' isolates now: their events are answered `interrupted` (their project moved). */
  | { t: 'interrupt'; sids: number[] };

/** Sandbox process → service. */
export type ChildMessage =
  | { t: 'ready'; rssMb: number }
  | { t: 'created'; sid: number; declared?: string; error?: { kind: 'error' | 'timeout' | 'memory_limit'; message: string; location?: SourceLocation } }
  | { t: 'outcome'; sid: number; did: number; outcome: Outcome; usable: boolean; rssMb: number }
  | { t: 'host'; sid: number; cid: number; op: string; args: string; remainingMs?: number }
  | { t: 'stopped'; sid: number; reason: StopReason; message: string }
  /** CPU each sandbox's isolate spent since the last report, in ms: [sid, ms] pairs (a shared process charges its projects by them). */
  | { t: 'cpu'; spent: Array<[number, number]> };
