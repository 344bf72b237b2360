/**
 * The build process: bundles (esbuild, lib/deploy/bundle.ts) and type-checks
 * (lib/deploy/typecheck-tree.ts) the trees the service sends it (lib/deploy/build-process.ts), one
 * at a time, and answers the bundle or the diagnostics.
 *
 * Why a process of its own, at a lower priority: a build is a tenant's work; it must not run on the
 * service's time. Every thread of this process runs at nice BUILD_NICE, set before esbuild starts,
 * so esbuild's service process (spawned at the first build) inherits it: the service, its HTTP
 * traffic and its database pool come first on the machine's cores (its start-up aside, below).
 */
import { bundleTree } from './bundle.js';
import { typecheckTree } from './typecheck-tree.js';
import { childrenOf, setNiceOfThreads } from '../platform/process-tree.js';
import { BUILD_NICE, type BuildReply, type BuildRequest, type BuildResult } from './build-protocol.js';

/**
 * Lowers every thread of this process and of its children: under tsx (tests, development) its
 * loader's own esbuild process was started before this module ran.
 */
function lowerPriority(): void {
  setNiceOfThreads(process.pid, BUILD_NICE);
  for (const child of childrenOf(process.pid)) setNiceOfThreads(child, BUILD_NICE);
}

function send(m: BuildReply): void {
  // The service is gone: nothing to answer to (the 'disconnect' handler ends us).
  if (process.connected) process.send!(m);
}

async function build(files: Map<string, string>): Promise<BuildResult> {
  const bundled = await bundleTree(files);
  if (!bundled.ok) return bundled;
  const diagnostics = typecheckTree(files);
  return diagnostics.length ? { ok: false, diagnostics } : bundled;
}

process.on('message', (m: BuildRequest) => {
  if (m.t !== 'build') return;
  // Again before each build: a thread started since by one not yet lowered would run at the service's priority.
  lowerPriority();
  build(new Map(m.files)).then(
    (result) => send({ t: 'built', id: m.id, result }),
    (e) => send({ t: 'failed', id: m.id, error: e instanceof Error ? e.message : String(e) }),
  );
});
// The service ended (even by kill -9): so do we (esbuild's process follows when its stdin closes).
process.on('disconnect', () => process.exit(0));
// The start-up is the service's own, the same for every project (loading the compiler, parsing its
// standard library's declarations, so that no project's build pays for them): at the service's
// priority, so a build waiting for a new process is not held up by it on a busy machine. Every
// build runs lowered.
typecheckTree(new Map([['src/main.ts', '']]));
lowerPriority();
send({ t: 'ready' });
