/**
 * Connector clients (managed by the platform): the project's own tables (the `public` schema in
 * production, `preview` in a preview run) and custom events for webhooks.
 */
import { hostCall } from './host.js';
import type { TableFilter, TableRow } from './types.js';

export const tables = {
  /** Rows matching every filter (at most `limit`, 1 to 50). */
  async select(table: string, options: { filters?: TableFilter[]; columns?: string[]; orderBy?: string; direction?: 'asc' | 'desc'; limit?: number } = {}): Promise<TableRow[]> {
    return hostCall('tables.select', { table, ...options });
  },
  /** Inserts one row and returns it as stored. */
  async insert(table: string, row: TableRow): Promise<TableRow> {
    return hostCall('tables.insert', { table, row });
  },
  /** Updates the rows matching every filter; returns how many changed. */
  async update(table: string, filters: TableFilter[], set: TableRow): Promise<number> {
    return hostCall('tables.update', { table, filters, set });
  },
  /** Deletes the rows matching every filter; returns how many went. */
  async delete(table: string, filters: TableFilter[]): Promise<number> {
    return hostCall('tables.delete', { table, filters });
  },
};

/**
 * Raises a custom event delivered to the webhooks subscribed to `name` (letters, digits, `.`,
 * `_`, `-`, at most 100 characters, not a platform name). True when accepted; never throws.
 */
export async function emit(name: string, payload?: unknown): Promise<boolean> {
  try {
    return (await hostCall('emit', { name, payload: payload === undefined ? null : payload })) === true;
  } catch {
    return false;
  }
}
