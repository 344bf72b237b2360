/** What a command of the operator CLI is (commands.ts lists them; each group's file defines its own). */
import type { ParsedArgs } from './args.js';
import type { AdminClient } from './client.js';

export type Group = 'dashboard' | 'projects' | 'keys' | 'connections' | 'tokens' | 'channel' | 'runtime' | 'webhooks' | 'tables' | 'broadcasts' | 'contacts' | 'code' | 'secrets' | 'schedules' | 'files' | 'flows' | 'templates';

export interface Result {
  data: unknown;
  human: string;
}

export interface Command {
  group: Group;
  name: string;
  /** Positional arguments, all required, e.g. ['<projectId>', '<name>']. */
  args: string[];
  /** Usage of the command's own flags, e.g. '--name NAME --scopes a,b [--test]'. */
  options?: string;
  /** Flags the command accepts besides the global ones. */
  flags?: string[];
  summary: string;
  /** More help after the usage line (e.g. the scope catalogue of commands that take scopes). */
  details?: () => string;
  /** 'api_key': the command uses a project key (SERVICE_API_KEY), not the operator token. */
  auth?: 'api_key';
  run(api: AdminClient, pos: string[], args: ParsedArgs): Promise<Result>;
}
