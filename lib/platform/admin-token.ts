/**
 * The operator token of the embedded default: generated once, kept in the data folder (mode
 * 0600) so it survives restarts. ADMIN_TOKEN in the environment takes precedence; set it when
 * several instances share one database.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { newSecret } from './secrets.js';

export async function loadOrCreateAdminToken(dataDir: string): Promise<{ token: string; created: boolean }> {
  const file = path.join(dataDir, 'admin-token');
  try {
    const token = (await readFile(file, 'utf8')).trim();
    if (token) return { token, created: false };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  await mkdir(dataDir, { recursive: true });
  const token = newSecret('adm_');
  await writeFile(file, token + '\n', { mode: 0o600 });
  return { token, created: true };
}
