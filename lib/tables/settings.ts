/** The rows engine's settings from the service's configuration: one place, so the API, the console and the bot read tables alike. */
import type { Deps } from '../deps.js';
import { cursorSecretOf } from '../platform/cursor.js';
import { quotaDefaultsOf } from './quota.js';
import type { TablesSettings } from './rows.js';

export function tablesSettingsOf(deps: Pick<Deps, 'config' | 'cursorSecret'>): TablesSettings {
  return {
    statementTimeoutMs: deps.config.tablesStatementTimeoutMs,
    cursorSecret: cursorSecretOf(deps),
    quota: quotaDefaultsOf(deps.config),
    pageMaxBytes: deps.config.tablesPageMaxBytes,
  };
}
