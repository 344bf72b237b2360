/** Forward order of delivery statuses: a lower rank never overwrites a higher one (sent → delivered → read; failed last). */
export const STATUS_RANK: Record<string, number> = { sent: 1, delivered: 2, read: 3, failed: 4 };

/** The rank of a status column in SQL, from the same table (0 for anything else, e.g. pending). */
export function statusRankSql(column: string): string {
  return `(CASE ${column} ${Object.entries(STATUS_RANK).map(([s, r]) => `WHEN '${s}' THEN ${r}`).join(' ')} ELSE 0 END)`;
}
