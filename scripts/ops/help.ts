/** Usage text, built from the command table so that help can never drift from what runs. */
import { COMMANDS, GROUPS, type Command, type Group } from './commands.js';

export const DEFAULT_URL = 'http://localhost:3000';
export const DEFAULT_TIMEOUT_SECONDS = 10;

const PROGRAM = 'npm run ops --';

export const synopsis = (c: Command) => [c.group, c.name, ...c.args, c.options ?? ''].filter(Boolean).join(' ');

function commandLines(commands: Command[]): string {
  const width = Math.max(...commands.map((c) => synopsis(c).length));
  return commands.map((c) => `  ${synopsis(c).padEnd(width)}  ${c.summary}`).join('\n');
}

const OPTIONS = `Options (any command):
  --json             Print exactly the response's data as JSON on stdout; errors as the error envelope on stderr
  --url URL          Service base URL (env SERVICE_URL, default ${DEFAULT_URL})
  --token TOKEN      Operator token (env ADMIN_TOKEN, required; prefer the env: flags show in the process list)
  --timeout SECONDS  Give up on a request after this long (default ${DEFAULT_TIMEOUT_SECONDS})
  -h, --help         Usage of a group or command, e.g. ${PROGRAM} keys --help

Exit codes: 0 success, 1 API or network error, 2 usage error.
In scripts, run \`npm run -s ops -- … --json\` (without -s, npm prints its own banner on stdout).`;

export function mainUsage(): string {
  const groups = (Object.keys(GROUPS) as Group[]).map(
    (g) => `${GROUPS[g]}:\n${commandLines(COMMANDS.filter((c) => c.group === g))}`,
  );
  return [
    'Operator CLI over the service\'s operator API (/admin).',
    '',
    `Usage: ${PROGRAM} <group> <command> [args] [--json]`,
    '       node --import tsx scripts/ops.ts <group> <command> [args] [--json]',
    '',
    ...groups.flatMap((g) => [g, '']),
    OPTIONS,
  ].join('\n');
}

export function groupUsage(group: Group): string {
  const commands = COMMANDS.filter((c) => c.group === group);
  // A group whose commands share details (the scope catalogue) shows them once.
  const details = [...new Set(commands.map((c) => c.details).filter((d) => d !== undefined))].map((d) => d());
  return [
    `${GROUPS[group]}.`,
    '',
    `Usage: ${PROGRAM} ${group} <command> [args] [--json]`,
    '',
    commandLines(commands),
    '',
    ...details.flatMap((d) => [d, '']),
    `Global options: --json, --url URL, --token TOKEN, --timeout SECONDS (see ${PROGRAM} --help).`,
  ].join('\n');
}

export function commandUsage(c: Command): string {
  return [
    `${c.summary}.`,
    '',
    `Usage: ${PROGRAM} ${synopsis(c)} [--json]`,
    '',
    ...(c.details ? [c.details(), ''] : []),
    `Global options: --json, --url URL, --token TOKEN, --timeout SECONDS (see ${PROGRAM} --help).`,
  ].join('\n');
}
