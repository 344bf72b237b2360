/**
 * Operator CLI: the bot's secrets (never their values: a value is read from the environment or
 * stdin, never from an argument, which shell history and process lists keep) and the hosts its
 * http.fetch may reach.
 */
import { flagSet, flagValue, UsageError, type ParsedArgs } from './args.js';
import type { Command } from './command.js';
import type { Schemas } from './client.js';
import * as f from './format.js';

const secretTable = (secrets: Schemas['BotSecret'][]) =>
  f.table(['NAME', 'FINGERPRINT', 'PRODUCTION ONLY', 'UPDATED'], secrets.map((s) => [s.name, s.fingerprint, s.production_only ? 'yes' : 'no', f.when(s.updated_at)]), 'No secrets.');

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  // One trailing newline (an echo or a file's last line) is not part of the value.
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

async function secretValue(name: string, args: ParsedArgs): Promise<string> {
  if (flagSet(args, 'stdin')) {
    const value = await readStdin();
    if (!value) throw new UsageError('secrets set --stdin read an empty value');
    return value;
  }
  const variable = flagValue(args, 'from-env') ?? name;
  const value = process.env[variable];
  if (!value) throw new UsageError(`secrets set reads the value from the environment variable ${variable} (or stdin with --stdin); it is not set`);
  return value;
}

const allowlistText = (hosts: string[] | null | undefined) =>
  hosts === null || hosts === undefined ? 'Any public https host (no allowlist); also loopback and private hosts over http while the service runs with DEV_ALLOW_PRIVATE_TARGETS=true (development only).' : hosts.length === 0 ? 'No host: every http.fetch is refused.' : `Allowed hosts:\n${hosts.map((h) => `  ${h}`).join('\n')}`;

export const SECRET_COMMANDS: Command[] = [
  {
    group: 'secrets', name: 'list', args: ['<projectId>'],
    summary: "List the bot's secrets: name, fingerprint, production-only, last change (never a value)",
    async run(api, [projectId]) {
      const data = await api.listSecrets(projectId);
      return { data, human: `${secretTable(data.secrets)}\n\n${data.secrets.length} of at most ${data.limits.max_secrets} secrets; values of at most ${data.limits.max_value_bytes} bytes.` };
    },
  },
  {
    group: 'secrets', name: 'set', args: ['<projectId>', '<NAME>'], options: '[--from-env VAR | --stdin] [--production-only]', flags: ['from-env', 'stdin', 'production-only'],
    summary: 'Set or replace a secret; its value is read from the environment variable NAME (or VAR, or stdin), never from an argument. Seen by the bot from its next message',
    async run(api, [projectId, name], args) {
      const value = await secretValue(name, args);
      const data = await api.setSecret(projectId, name, { value, ...(flagSet(args, 'production-only') ? { production_only: true } : {}) });
      const s = data.secret;
      return { data, human: `Secret ${s.name} set (fingerprint ${s.fingerprint}${s.production_only ? ', production only' : ''}).` };
    },
  },
  {
    group: 'secrets', name: 'delete', args: ['<projectId>', '<NAME>'],
    summary: 'Delete a secret (the bot reads null from its next message)',
    async run(api, [projectId, name]) {
      const data = await api.deleteSecret(projectId, name);
      return { data, human: `Secret ${data.secret.name} deleted.` };
    },
  },
  {
    group: 'code', name: 'http-allowlist', args: ['<projectId>'], options: '[--hosts a.example.com,*.b.example.com | --any]', flags: ['hosts', 'any'],
    summary: "Show, or set, the hosts the bot's http.fetch may reach (--any: any public https host)",
    async run(api, [projectId], args) {
      const hosts = flagValue(args, 'hosts');
      if (hosts !== undefined && flagSet(args, 'any')) throw new UsageError('give --hosts or --any, not both');
      const data = hosts !== undefined
        ? await api.setHttpAllowlist(projectId, { hosts: hosts.split(',').map((h) => h.trim()).filter(Boolean) })
        : flagSet(args, 'any') ? await api.setHttpAllowlist(projectId, { hosts: null }) : await api.getHttpAllowlist(projectId);
      return { data, human: allowlistText(data.hosts) };
    },
  },
];
