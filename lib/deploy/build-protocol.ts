/** What a build answers, and the messages between the service and its build process (lib/deploy/build-child.ts). */
import type { Diagnostic } from './diagnostic.js';

export const ENTRY = 'src/main.ts';

/** The build process's priority (nice) on every thread: below the service's (0). */
export const BUILD_NICE = 10;

export type BuildResult =
  | { ok: true; bundle: string; sourceMap: string }
  | { ok: false; diagnostics: Diagnostic[] };

/** Service → build process: one tree to bundle and type-check. */
export type BuildRequest = { t: 'build'; id: number; files: Array<[string, string]> };

/** Build process → service. `error`: the build itself failed (not the tree's diagnostics). */
export type BuildReply =
  | { t: 'ready' }
  | { t: 'built'; id: number; result: BuildResult }
  | { t: 'failed'; id: number; error: string };
