/**
 * Hand-written argument parsing for the operator CLI. Flags may appear anywhere on the line, as
 * `--name value` or `--name=value`; `--` ends the flags. Which flags a command accepts is checked
 * later, against the command's own list, so that a typo is a usage error and never a silent no-op.
 */

/** Flags that take no value. Every other known flag takes exactly one. */
const SWITCHES = new Set(['json', 'help', 'test', 'default', 'dry-run', 'reset-password', 'stdin', 'production-only', 'any', 'force']);
/** Flags that take a value. */
const VALUED = new Set(['url', 'token', 'timeout', 'id', 'quota', 'reserve', 'name', 'scopes', 'expires-in', 'phone-number-id', 'waba-id', 'app-id', 'display-phone', 'status', 'limit', 'schema', 'sql', 'file', 'project', 'at', 'by', 'reason', 'country', 'message', 'tree', 'level', 'role', 'rows', 'bytes', 'from-env', 'hosts', 'out', 'sample']);
/** Accepted by every command. */
export const GLOBAL_FLAGS = ['json', 'help', 'url', 'token', 'timeout'];

export interface ParsedArgs {
  positionals: string[];
  flags: Map<string, string | true>;
}

/** A mistake on the command line or in the configuration: exit code 2, and usually the usage. */
export class UsageError extends Error {
  constructor(message: string, readonly code = 'usage_error', readonly showUsage = true) {
    super(message);
  }
}

export function parseArgs(argv: readonly string[]): ParsedArgs {
  const positionals: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-h') {
      flags.set('help', true);
      continue;
    }
    // A lone dash or a negative number is a value, not a flag.
    if (!arg.startsWith('--')) {
      if (/^-[A-Za-z]/.test(arg)) throw new UsageError(`unknown option ${arg}`);
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    if (flags.has(name)) throw new UsageError(`--${name} given twice`);
    if (SWITCHES.has(name)) {
      if (eq !== -1) throw new UsageError(`--${name} takes no value`);
      flags.set(name, true);
    } else if (VALUED.has(name)) {
      const value = eq !== -1 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined || (eq === -1 && value.startsWith('--'))) throw new UsageError(`--${name} needs a value`);
      flags.set(name, value);
    } else {
      throw new UsageError(`unknown option --${name}`);
    }
  }
  return { positionals, flags };
}

/** The value of a flag that takes one, or undefined when absent. */
export function flagValue(args: ParsedArgs, name: string): string | undefined {
  const v = args.flags.get(name);
  return typeof v === 'string' ? v : undefined;
}

export function flagSet(args: ParsedArgs, name: string): boolean {
  return args.flags.get(name) === true;
}

/** A whole number within bounds, or a usage error naming what was expected. */
export function parseInteger(raw: string, what: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^-?\d+$/.test(raw.trim())) throw new UsageError(`${what} must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
    throw new UsageError(`${what} must be a whole number ${range}, got "${raw}"`);
  }
  return n;
}

/** One of the given values, or a usage error listing them. */
export function parseChoice<T extends string>(raw: string, what: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(raw)) throw new UsageError(`${what} must be one of ${choices.join(', ')}, got "${raw}"`);
  return raw as T;
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** Seconds, given as `3600` or with a unit: `90s`, `30m`, `12h`, `30d`. */
export function parseDuration(raw: string, what: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(raw.trim());
  if (!m) throw new UsageError(`${what} must be seconds or a number with s, m, h or d (e.g. 3600, 12h, 30d), got "${raw}"`);
  return Number(m[1]) * UNIT_SECONDS[m[2] || 's'];
}

/** `a,b, c` → ['a', 'b', 'c']; at least one entry. */
export function parseList(raw: string, what: string): string[] {
  const items = raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw new UsageError(`${what} needs at least one entry (comma-separated)`);
  return items;
}
