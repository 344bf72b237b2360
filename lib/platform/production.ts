/**
 * What a production start (NODE_ENV=production) must be told, checked before anything starts:
 * the embedded defaults that suit one developer's machine (a PostgreSQL in DATA_DIR, a generated
 * operator token and master key, the bundled simulator as the channel) are each a silent failure
 * once there are several instances or a container whose disk is thrown away. A missing setting is
 * named and the process exits at once with EX_CONFIG (78), so a supervisor shows the reason
 * instead of a restart loop hiding it (docs/deploy.md).
 */
import type { Config } from './config.js';
import { parseMasterKey } from './master-key.js';

/** Exit status of a configuration error (sysexits.h EX_CONFIG). */
export const EXIT_CONFIG = 78;

/** The settings production needs and does not have, each with why; empty when all is well. */
export function productionProblems(config: Config): string[] {
  if (config.nodeEnv !== 'production') return [];
  const out: string[] = [];
  if (!config.databaseUrl) out.push('DATABASE_URL is required in production (the embedded PostgreSQL is for one development machine)');
  if (!config.encryptionKey) out.push('ENCRYPTION_KEY is required in production (every instance must open the same stored secrets)');
  else {
    try {
      parseMasterKey(config.encryptionKey);
    } catch (e) {
      out.push((e as Error).message.replace(/^Configuration: /, ''));
    }
  }
  if (!config.adminToken) out.push('ADMIN_TOKEN is required in production (a generated one would differ per instance)');
  else if (config.adminToken.length < 32) out.push('ADMIN_TOKEN must be at least 32 characters in production');
  if (!config.graphBaseUrl && !config.simulatorUrl) out.push('GRAPH_BASE_URL (or SIMULATOR_URL for a dry run) is required in production (the bundled simulator is for development)');
  for (const [name, value] of [['DATABASE_URL', config.databaseUrl], ['ADMIN_TOKEN', config.adminToken], ['ENCRYPTION_KEY', config.encryptionKey]] as const) {
    if (value?.includes('CHANGE_ME')) out.push(`${name} still holds the example's CHANGE_ME placeholder`);
  }
  return out;
}
