/**
 * Paths of the bot's code tree, and which of them the platform manages.
 *
 * Policy and why:
 * - A path is relative and `/`-separated; each segment is letters, digits, `.`, `_`, `-`, `@`
 *   (ASCII only, so no look-alike or full-width character can spell a protected name), at most
 *   255 characters in all. Anything else is 400 `invalid_path`: absolute paths, backslashes,
 *   NUL and control characters, a `%` left after the one URL decoding (double encoding), and
 *   segments ending in `.` (Windows would drop the dot: `package.json.`).
 * - Protection is judged first, on the canonical form (`.` and empty segments dropped, `..`
 *   resolved inside the tree, lower-cased), so that `./package.json`, `src//main.ts`,
 *   `SRC/Main.ts` or `src/x/../main.ts` are all refused as the protected file they name, with
 *   403, and the file stays unchanged. Only then is a non-canonical spelling refused with 400
 *   (naming the canonical path), and a `..` that leaves the tree is 400 too.
 * - Flow definitions (`flows/…`) are refused with their own code: they change only through the
 *   flow endpoints, which write them with `writeFlowFile` (lib/code/store.ts).
 */
import { ApiError } from '../platform/errors.js';

export const MAX_PATH_LENGTH = 255;

export type ProtectedReason =
  | 'entry_point'
  | 'dependency_manifest'
  | 'channel_endpoint'
  | 'runtime_helper'
  | 'generated_manifest'
  | 'internal_directory'
  | 'flow_definition';

/** The folder of flow definitions, one `<name>.json` per flow. */
export const FLOWS_DIR = 'flows/';

/** Exact protected paths (lower case). */
const PROTECTED_FILES: Record<string, ProtectedReason> = {
  'src/main.ts': 'entry_point',
  'package.json': 'dependency_manifest',
  'package-lock.json': 'dependency_manifest',
  'tsconfig.json': 'dependency_manifest',
  'manifest.json': 'generated_manifest',
  'src/platform/webhook.ts': 'channel_endpoint',
  'src/platform/send.ts': 'channel_endpoint',
};

/** Protected folders (lower case, with the trailing slash); the first match wins. */
const PROTECTED_DIRS: Array<[string, ProtectedReason]> = [
  ['src/platform/runtime/', 'runtime_helper'],
  ['src/platform/generated/', 'generated_manifest'],
  // Anything else the platform keeps beside its endpoints and helpers.
  ['src/platform/', 'runtime_helper'],
  ['.platform/', 'internal_directory'],
  [FLOWS_DIR, 'flow_definition'],
];

const SEGMENT = /^[A-Za-z0-9._@-]+$/;

function invalid(path: string, why: string, extra: Record<string, unknown> = {}): ApiError {
  return new ApiError('invalid_path', `Invalid file path "${printable(path)}": ${why}.`, { path: printable(path), ...extra });
}

function printable(path: string): string {
  return path.slice(0, 300).replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Why the platform manages this (canonical) path, or undefined for a user file. */
export function protectionOf(canonical: string): ProtectedReason | undefined {
  const lower = canonical.toLowerCase();
  if (Object.hasOwn(PROTECTED_FILES, lower)) return PROTECTED_FILES[lower];
  for (const [dir, reason] of PROTECTED_DIRS) {
    if (lower.startsWith(dir) || lower === dir.slice(0, -1)) return reason;
  }
  return undefined;
}

export function protectedError(canonical: string, reason: ProtectedReason): ApiError {
  if (reason === 'flow_definition') {
    return new ApiError('flow_file_forbidden', `${canonical} is a flow definition: flows change only through the flow endpoints.`, { path: canonical, reason });
  }
  return new ApiError('protected_file', `${canonical} is managed by the platform (${reason.replace(/_/g, ' ')}) and cannot be written.`, { path: canonical, reason });
}

/** Percent-decoding repeated until stable (a few rounds): how a double-encoded name reads. */
function decodeFully(raw: string): string {
  let s = raw;
  for (let i = 0; i < 4 && s.includes('%'); i++) {
    try {
      const next = decodeURIComponent(s);
      if (next === s) break;
      s = next;
    } catch {
      break;
    }
  }
  return s;
}

/**
 * Resolves `.`, `..` and empty segments; undefined when `..` leaves the tree. Judged before the
 * character rules, so a protected file named with odd characters elsewhere is still found.
 */
function resolveSegments(raw: string): string[] | undefined {
  const out: string[] = [];
  for (const seg of raw.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (out.length === 0) return undefined;
      out.pop();
      continue;
    }
    out.push(seg);
  }
  return out;
}

/**
 * The canonical path of a path given for reading or writing, or an ApiError: 403 for any
 * spelling of a protected path when `forWrite`, 400 `invalid_path` otherwise.
 */
export function canonicalPath(raw: unknown, opts: { forWrite: boolean }): string {
  if (typeof raw !== 'string' || raw.length === 0) throw invalid(String(raw ?? ''), 'empty');
  if (raw.length > 1024) throw invalid(raw, `longer than ${MAX_PATH_LENGTH} characters`);
  // Backslashes are read as separators for the protection check only (`src\main.ts`).
  const resolved = resolveSegments(raw);
  const probe = resolveSegments(decodeFully(raw).replace(/\\/g, '/').replace(/[\u0000-\u001f\u007f]/g, ''));
  if (opts.forWrite && probe && probe.length > 0) {
    const canonical = probe.join('/');
    const reason = protectionOf(canonical) ?? protectionOf(canonical.replace(/[.\s]+$/, ''));
    if (reason) throw protectedError(canonical.replace(/[.\s]+$/, ''), reason);
  }
  if (raw.startsWith('/')) throw invalid(raw, 'absolute paths are not allowed; give the path inside the tree');
  if (raw.includes('\\')) throw invalid(raw, 'use / as the separator, never \\');
  if (/[\u0000-\u001f\u007f]/.test(raw)) throw invalid(raw, 'NUL and control characters are not allowed');
  if (raw.includes('%')) throw invalid(raw, '"%" is not allowed (encode the path once, and only its slashes)');
  if (!resolved) throw invalid(raw, '".." leaves the tree');
  if (resolved.length === 0) throw invalid(raw, 'names no file');
  const canonical = resolved.join('/');
  if (canonical !== raw) throw invalid(raw, `not canonical; the canonical path is "${canonical}"`, { canonical });
  if (canonical.length > MAX_PATH_LENGTH) throw invalid(raw, `longer than ${MAX_PATH_LENGTH} characters`);
  for (const seg of resolved) {
    if (!SEGMENT.test(seg)) throw invalid(raw, `segment "${seg}" may hold only letters, digits, ".", "_", "-" and "@"`);
    if (seg.endsWith('.')) throw invalid(raw, `segment "${seg}" ends with "."`);
  }
  return canonical;
}

/** Whether a canonical path is a flow definition file. */
export function isFlowPath(canonical: string): boolean {
  return canonical.toLowerCase().startsWith(FLOWS_DIR);
}
