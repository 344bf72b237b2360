/**
 * A local file a command was given (a CSV to import, SQL, a table description), read by `read`;
 * when it cannot be, the command stops with the reason and without the usage text: the command
 * was right, the file was not.
 */
import { UsageError } from './args.js';

export function fromLocalFile<T>(what: string, read: () => T): T {
  try {
    return read();
  } catch (e) {
    throw new UsageError(`cannot read ${what}: ${(e as Error).message}`, 'usage_error', false);
  }
}
