/**
 * Marketing consent of a contact: `opted_in`, `opted_out` or `unknown`, with when and from where.
 *
 * Storage keeps the columns the broadcasts already read (`opted_in`, `opted_out_at`, `opted_in_at`)
 * and adds who set it last (`consent_source`) and when (`consent_at`), so the audience queries did
 * not change: opted out is `opted_out_at IS NOT NULL`; opted in is `opted_in AND opted_out_at IS NULL`.
 * A consent set by an import before the source was recorded reads as source `import`.
 */


export type ConsentStatus = 'opted_in' | 'opted_out' | 'unknown';
export type ConsentSource = 'import' | 'api' | 'keyword' | 'user_preferences' | 'error_131050';

export interface ConsentColumns {
  optedIn: boolean;
  optedOutAt?: Date | null;
  optedInAt?: Date | null;
  consentSource?: string | null;
  consentAt?: Date | null;
}

export function consentStatus(row: ConsentColumns): ConsentStatus {
  if (row.optedOutAt) return 'opted_out';
  return row.optedIn ? 'opted_in' : 'unknown';
}

export function consentView(row: ConsentColumns): { status: ConsentStatus; source: ConsentSource | null; updated_at: string | null } {
  const status = consentStatus(row);
  const at = row.consentAt ?? (status === 'opted_out' ? row.optedOutAt : status === 'opted_in' ? row.optedInAt : null) ?? null;
  const source = (row.consentSource as ConsentSource | null | undefined) ?? (status === 'unknown' ? null : 'import');
  return { status, source, updated_at: at ? at.toISOString() : null };
}

/** The SET list that gives a contact (alias-free UPDATE of `contacts`) this consent now ($at, $source given as SQL). */
export function consentSetSql(status: ConsentStatus, at: string, source: string): string {
  const common = `consent_source = ${source}, consent_at = ${at}, updated_at = ${at}`;
  if (status === 'opted_out') return `opted_in = false, opted_out_at = ${at}, opted_in_at = NULL, opt_in_import_id = NULL, ${common}`;
  if (status === 'opted_in') return `opted_in = true, opted_in_at = ${at}, opted_out_at = NULL, opt_in_import_id = NULL, ${common}`;
  return `opted_in = false, opted_in_at = NULL, opted_out_at = NULL, opt_in_import_id = NULL, ${common}`;
}

/** The WHERE condition that is true when a contact already has `status`. */
export function consentIsSql(status: ConsentStatus): string {
  return status === 'opted_out' ? 'opted_out_at IS NOT NULL'
    : status === 'opted_in' ? '(opted_in AND opted_out_at IS NULL)'
    : '(NOT opted_in AND opted_out_at IS NULL)';
}
