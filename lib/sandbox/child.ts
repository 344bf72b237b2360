/**
 * The sandbox process: hosts the isolates (lib/sandbox/sandbox.ts) the service's supervisor
 * (lib/sandbox/supervisor.ts) asks for, and forwards their helper calls to it over IPC.
 *
 * Why a process of its own: isolated-vm ends its whole process on some failures it cannot
 * recover from (a FatalRuntimeError thrown outside its catch, a catastrophic out-of-memory), and
 * the host memory of copies in and out of isolates is held by the process making them. Here,
 * either costs this process and the events it was running; the service restarts it.
 */
import { Sandbox, StartupError, type HostFn } from './sandbox.js';
import type { ChildMessage, ParentMessage } from './protocol.js';

const sandboxes = new Map<number, Sandbox>();
/** Per sandbox: its isolate's CPU already reported (ns); a sandbox is read while it may be spending. */
const reported = new Map<number, bigint>();
/** Sandboxes read at the next CPU report: busy now, or busy since the last report. */
const active = new Set<number>();
/** How often the isolates' CPU is reported: a shared process charges each project while it runs, not after. */
const CPU_REPORT_MS = 100;
const calls = new Map<number, (answer: string) => void>();
let nextCall = 1;

function send(message: ChildMessage): void {
  // The parent is gone: nothing to answer to (the 'disconnect' handler ends us).
  if (process.connected) process.send!(message);
}

function hostFor(sid: number): HostFn {
  return (op, args, call) =>
    new Promise<string>((resolve) => {
      const cid = nextCall++;
      calls.set(cid, resolve);
      send({ t: 'host', sid, cid, op, args, remainingMs: call?.remainingMs });
    });
}

/** Sends what each active sandbox's isolate spent since its last report. */
function reportCpu(): void {
  const spent: Array<[number, number]> = [];
  for (const sid of active) {
    const sandbox = sandboxes.get(sid);
    const now = sandbox?.cpuTotalNs();
    if (!sandbox || now === undefined) {
      active.delete(sid);
      continue;
    }
    const before = reported.get(sid) ?? 0n;
    if (now > before) spent.push([sid, Number(now - before) / 1e6]);
    reported.set(sid, now);
    if (!sandbox.busy) active.delete(sid);
  }
  if (spent.length) send({ t: 'cpu', spent });
}
setInterval(reportCpu, CPU_REPORT_MS).unref();

function rssMb(): number {
  return Math.round(process.memoryUsage.rss() / 1048576);
}

async function onMessage(m: ParentMessage): Promise<void> {
  switch (m.t) {
    case 'create': {
      try {
        const sandbox = await Sandbox.create(m.bundle, m.sourceMap, hostFor(m.sid), m.limits, {
          onStopped: (reason, message) => send({ t: 'stopped', sid: m.sid, reason, message }),
          ops: m.ops,
        });
        sandboxes.set(m.sid, sandbox);
        // Its start-up's CPU is reported with the next read.
        active.add(m.sid);
        send({ t: 'created', sid: m.sid, declared: sandbox.declared });
      } catch (e) {
        const error = e instanceof StartupError
          ? { kind: e.kind, message: e.message, location: e.location }
          : { kind: 'error' as const, message: e instanceof Error ? e.message : String(e) };
        send({ t: 'created', sid: m.sid, error });
      }
      return;
    }
    case 'dispatch': {
      const sandbox = sandboxes.get(m.sid);
      active.add(m.sid);
      const outcome = sandbox
        ? await sandbox.dispatch(m.event)
        : { status: 'error' as const, message: 'The sandbox was disposed.', durationMs: 0 };
      send({ t: 'outcome', sid: m.sid, did: m.did, outcome, usable: sandbox?.usable ?? false, rssMb: rssMb() });
      return;
    }
    case 'answer': {
      const resolve = calls.get(m.cid);
      calls.delete(m.cid);
      resolve?.(m.answer);
      return;
    }
    case 'dispose': {
      reportCpu();
      sandboxes.get(m.sid)?.dispose();
      sandboxes.delete(m.sid);
      reported.delete(m.sid);
      active.delete(m.sid);
      return;
    }
    case 'interrupt': {
      reportCpu();
      for (const sid of m.sids) sandboxes.get(sid)?.interrupt();
      return;
    }
  }
}

process.on('message', (m: ParentMessage) => void onMessage(m));
// The service ended (even by kill -9): so do we.
process.on('disconnect', () => process.exit(0));
send({ t: 'ready', rssMb: rssMb() });
