/**
 * The dispatcher: argv → command → API call → output and exit code.
 * Exit codes: 0 success, 1 API or network error, 2 usage or configuration error.
 * With --json, stdout gets exactly the response's `data` and stderr gets one error envelope;
 * without it, both are text for people. The operator token is never printed.
 */
import { flagSet, flagValue, GLOBAL_FLAGS, parseArgs, parseInteger, UsageError, type ParsedArgs } from './args.js';
import { AdminClient, OpsFailure, redact, type ClientConfig, type FailureEnvelope } from './client.js';
import { findCommand, isGroup, type Command } from './commands.js';
import { commandUsage, DEFAULT_TIMEOUT_SECONDS, DEFAULT_URL, groupUsage, mainUsage } from './help.js';

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: Io = {
  out: (text) => void process.stdout.write(text + '\n'),
  err: (text) => void process.stderr.write(text + '\n'),
};

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  let json = argv.includes('--json'); // known even when the rest of the line does not parse
  let usage = mainUsage();
  let token = '';
  try {
    const args = parseArgs(argv);
    json = flagSet(args, 'json');
    const [group, name, ...rest] = args.positionals;
    const help = flagSet(args, 'help');
    if (group === 'help') return showHelp(args.positionals.slice(1), io);
    if (group === undefined) {
      if (help) return print(io, mainUsage());
      throw new UsageError('no command given');
    }
    if (!isGroup(group)) throw new UsageError(`unknown command "${group}"`);
    usage = groupUsage(group);
    if (name === undefined) {
      if (help) return print(io, usage);
      throw new UsageError(`"${group}" needs a command`);
    }
    const command = findCommand(group, name);
    if (!command) throw new UsageError(`unknown command "${group} ${name}"`);
    usage = commandUsage(command);
    if (help) return print(io, usage);
    checkLine(command, rest, args);
    const config = clientConfig(args, env, command.auth === 'api_key');
    token = config.token;
    const result = await command.run(new AdminClient(config), rest, args);
    io.out(json ? JSON.stringify(result.data, null, 2) : result.human);
    return 0;
  } catch (e) {
    if (e instanceof UsageError) {
      if (json) io.err(JSON.stringify(envelope(e.code, e.message)));
      else io.err(`error: ${e.message}${e.showUsage ? `\n\n${usage}` : ''}`);
      return 2;
    }
    const failure = e instanceof OpsFailure ? e : new OpsFailure(envelope('cli_error', `unexpected: ${(e as Error)?.stack ?? e}`));
    io.err(redact(json ? JSON.stringify(failure.envelope) : describeFailure(failure.envelope), token));
    return 1;
  }
}

function print(io: Io, text: string): number {
  io.out(text);
  return 0;
}

/** `help`, `help <group>`, `help <group> <command>`. */
function showHelp([group, name, ...extra]: string[], io: Io): number {
  if (group === undefined) return print(io, mainUsage());
  if (!isGroup(group)) throw new UsageError(`unknown command "${group}"`);
  if (name === undefined) return print(io, groupUsage(group));
  const command = findCommand(group, name);
  if (!command || extra.length) throw new UsageError(`unknown command "${[group, name, ...extra].join(' ')}"`);
  return print(io, commandUsage(command));
}

function checkLine(command: Command, rest: string[], args: ParsedArgs): void {
  const allowed = new Set([...GLOBAL_FLAGS, ...(command.flags ?? [])]);
  for (const flag of args.flags.keys()) {
    if (!allowed.has(flag)) throw new UsageError(`${command.group} ${command.name} does not take --${flag}`);
  }
  if (rest.length < command.args.length) {
    throw new UsageError(`missing ${command.args.slice(rest.length).join(' ')}`);
  }
  if (rest.length > command.args.length) {
    throw new UsageError(`too many arguments: ${rest.slice(command.args.length).map((a) => JSON.stringify(a)).join(' ')} (quote a value that contains spaces)`);
  }
}

function clientConfig(args: ParsedArgs, env: NodeJS.ProcessEnv, keyOnly = false): ClientConfig {
  const rawUrl = flagValue(args, 'url') ?? (env.SERVICE_URL?.trim() || DEFAULT_URL);
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new UsageError(`the service URL "${rawUrl}" is not a URL (--url or SERVICE_URL, e.g. ${DEFAULT_URL})`, 'invalid_url', false);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`the service URL must start with http:// or https://, got "${rawUrl}"`, 'invalid_url', false);
  }

  const token = (flagValue(args, 'token') ?? env.ADMIN_TOKEN ?? '').trim();
  if (!token && !keyOnly) {
    throw new UsageError(
      'ADMIN_TOKEN is not set. Export ADMIN_TOKEN=<operator token> (or pass --token). ' +
        'The server prints the token when it generates one at first start, and keeps it in <DATA_DIR>/admin-token (default .data/admin-token).',
      'admin_token_missing',
      false,
    );
  }
  if (/[^\x21-\x7e]/.test(token)) {
    throw new UsageError('ADMIN_TOKEN contains spaces or control characters; check how it was copied.', 'admin_token_invalid', false);
  }

  const timeout = flagValue(args, 'timeout');
  const seconds = timeout === undefined ? DEFAULT_TIMEOUT_SECONDS : parseInteger(timeout, '--timeout', 1);
  return { baseUrl: url.href.replace(/\/+$/, ''), token, timeoutMs: seconds * 1000 };
}

function envelope(code: string, message: string): FailureEnvelope {
  return { success: false, error: { code, message } };
}

const HINTS: Record<string, string> = {
  api_key_required: 'the operator token was not sent; set ADMIN_TOKEN.',
  invalid_token: 'ADMIN_TOKEN does not match the server\'s operator token.',
  unreachable: 'is the service running (npm start)? Point the CLI at it with --url or SERVICE_URL.',
  timeout: 'the service did not answer in time; retry, or raise --timeout.',
};

/** `error <code>: <message> (request <id>)`, then field details and a hint when there is one. */
function describeFailure({ error, request_id }: FailureEnvelope): string {
  const lines = [`error ${error.code}: ${error.message}${request_id ? ` (request ${request_id})` : ''}`];
  const fields = (error.details as { fields?: Array<{ field: string; message: string }> } | undefined)?.fields;
  // Field lines, unless the message already says the same (the validator's messages do).
  if (Array.isArray(fields)) {
    lines.push(...fields.filter((f) => !error.message.includes(`${f.field} ${f.message}`)).map((f) => `  ${f.field}: ${f.message}`));
  }
  else if (error.details !== undefined) lines.push(`  details: ${JSON.stringify(error.details)}`);
  if (HINTS[error.code]) lines.push(`hint: ${HINTS[error.code]}`);
  return lines.join('\n');
}
