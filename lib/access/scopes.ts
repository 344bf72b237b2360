/** The one scope check: what a request needs against what the credential holds on the selected project only. */
import { ApiError } from '../platform/errors.js';
import type { AuthContext } from './types.js';

/**
 * Refuses with 403 `insufficient_scope` unless `auth` holds every scope of `needed`.
 * `purpose` says what needs them ("This operation", "Subscribing to these events");
 * `required` is the whole set reported (default: `needed`).
 */
export function requireScopes(auth: AuthContext, needed: readonly string[], purpose: string, required: readonly string[] = needed): void {
  const missing = needed.filter((s) => !auth.scopes.includes(s));
  if (missing.length === 0) return;
  throw new ApiError('insufficient_scope', `${purpose} needs the scope ${missing.join(', ')} on project "${auth.project.id}".`, {
    required: [...required],
    missing,
  });
}
