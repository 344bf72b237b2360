/**
 * Type checks run in one long-lived worker thread (lib/deploy/typecheck-worker.mjs), never on the
 * service's event loop; checks queue in the worker one at a time. The worker is started on first
 * use, does not keep the process alive, and is replaced if it dies.
 */
import { Worker } from 'node:worker_threads';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../platform/project-root.js';
import type { Diagnostic } from './diagnostic.js';

// From the sources, also when this module runs compiled from dist/ (tsc does not copy .mjs files).
const WORKER_URL = pathToFileURL(path.join(PROJECT_ROOT, 'lib', 'deploy', 'typecheck-worker.mjs'));

let worker: Worker | undefined;
let nextId = 1;
const pending = new Map<number, { resolve: (d: Diagnostic[]) => void; reject: (e: Error) => void }>();

function failAll(e: Error): void {
  for (const p of pending.values()) p.reject(e);
  pending.clear();
  worker = undefined;
}

function workerOf(): Worker {
  if (!worker) {
    // No inherited preloads: the service's own (tsx, the tracing bootstrap's .ts under start:dev)
    // are not for a plain .mjs worker and fail to load in it.
    const w = new Worker(WORKER_URL, { execArgv: [] });
    w.unref();
    w.on('message', (m: { id: number; diagnostics?: Diagnostic[]; error?: string }) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error !== undefined) p.reject(new Error(`type check failed: ${m.error}`));
      else p.resolve(m.diagnostics ?? []);
      if (pending.size === 0) w.unref();
    });
    w.on('error', (e) => failAll(e));
    w.on('exit', (code) => failAll(new Error(`the type-check worker exited (${code})`)));
    worker = w;
  }
  return worker;
}

export function typecheckInWorker(files: Map<string, string>): Promise<Diagnostic[]> {
  const w = workerOf();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    // Kept alive while a check is pending, so the answer is awaited.
    w.ref();
    w.postMessage({ id, files: [...files] });
  });
}

/** Stops the worker (tests, shutdown); the next check starts a new one. */
export async function stopTypecheckWorker(): Promise<void> {
  const w = worker;
  worker = undefined;
  if (w) await w.terminate();
}
