/**
 * The service's master key (32 bytes): ENCRYPTION_KEY (base64 or hex) when set, which every
 * instance sharing a database must share; otherwise generated once into the data folder, like
 * the operator token of the embedded default.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

export function parseMasterKey(value: string): Buffer {
  const v = value.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(v) ? Buffer.from(v, 'hex') : Buffer.from(v, 'base64');
  if (key.length !== 32) throw new Error('Configuration: ENCRYPTION_KEY must be 32 bytes, as 64 hex characters or base64');
  return key;
}

export async function loadOrCreateMasterKey(dataDir: string, fromEnv?: string): Promise<Buffer> {
  if (fromEnv) return parseMasterKey(fromEnv);
  const file = path.join(dataDir, 'encryption-key');
  try {
    return parseMasterKey(await readFile(file, 'utf8'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  await mkdir(dataDir, { recursive: true });
  const key = randomBytes(32);
  await writeFile(file, key.toString('base64') + '\n', { mode: 0o600 });
  return key;
}
