/**
 * What an audit row changed, field by field: its `before` and `after` states flattened to dotted
 * paths (`scopes`, `preflight.quota.held`), and only the paths whose value differs, each with its
 * value before and after (absent when the field was added or removed). A list's value is compared
 * and shown whole. The audit trail shows this instead of two raw JSON documents.
 */
export interface FieldChange {
  field: string;
  before?: string;
  after?: string;
}

/** The longest value a change shows; the rest is cut with an ellipsis. */
const VALUE_CHARS = 200;

function flatten(v: unknown, prefix: string, out: Map<string, string>): void {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const entries = Object.entries(v as Record<string, unknown>);
    if (!entries.length && prefix) out.set(prefix, '{}');
    for (const [k, x] of entries) flatten(x, prefix ? `${prefix}.${k}` : k, out);
    return;
  }
  if (v === undefined) return;
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  out.set(prefix || 'value', text.length > VALUE_CHARS ? `${text.slice(0, VALUE_CHARS)}…` : text);
}

export function auditChanges(before: unknown, after: unknown): FieldChange[] {
  const a = new Map<string, string>();
  const b = new Map<string, string>();
  if (before !== null && before !== undefined) flatten(before, '', a);
  if (after !== null && after !== undefined) flatten(after, '', b);
  const fields = [...new Set([...a.keys(), ...b.keys()])];
  return fields
    .filter((f) => a.get(f) !== b.get(f))
    .map((field) => ({ field, ...(a.has(field) ? { before: a.get(field) } : {}), ...(b.has(field) ? { after: b.get(field) } : {}) }));
}
