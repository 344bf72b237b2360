/**
 * Loads an OpenAPI document and indexes its operations by operationId. The document is the
 * single source of truth: routing, validation and per-operation policy (`x-required-scopes`,
 * `x-project-scoped`, `x-idempotent`, `x-body-limit`, `x-upload-metered`) are read from it, so
 * the code cannot drift from what is published.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

export interface OperationInfo {
  operationId: string;
  method: string;
  path: string;
  /** Scopes required on the selected project; empty means any valid credential. */
  requiredScopes: string[];
  /** False when no credential is needed (`security: []`). */
  secured: boolean;
  /** False when the operation does not act on one selected project (e.g. listing projects). */
  projectScoped: boolean;
  /** Honours the Idempotency-Key header (`x-idempotent: true`). */
  idempotent: boolean;
  /** Largest JSON body accepted, in bytes (`x-body-limit`; default 1 MB). */
  bodyLimit: number;
  /** The 413 code of a body over `bodyLimit` (`x-body-limit-code`; default `payload_too_large`). */
  bodyLimitCode: 'payload_too_large' | 'file_too_large';
  /**
   * Takes a file (`x-upload-metered: true`): metered against the per-key upload budget
   * (middleware/upload-budget.ts) and its body streamed, never buffered (middleware/upload-body.ts).
   */
  uploadMetered: boolean;
}

export interface Contract {
  document: Record<string, any>;
  operations: Map<string, OperationInfo>;
}

export function loadContract(file: string, opts: { requireScopes: boolean }): Contract {
  return contractOf(parse(readFileSync(file, 'utf8')) as Record<string, any>, file, opts);
}

/** Indexes an already parsed document (`file` names it in errors), with the same checks as `loadContract`. */
export function contractOf(document: Record<string, any>, file: string, opts: { requireScopes: boolean }): Contract {
  const operations = new Map<string, OperationInfo>();
  const rootSecured = Array.isArray(document.security) && document.security.length > 0;
  // The scope catalogue is the contract's own `Scope` enum: a name outside it could never be
  // granted (the operator API refuses it), so the operation would be unreachable.
  const catalogue: unknown = document.components?.schemas?.Scope?.enum;
  const known = Array.isArray(catalogue) ? new Set(catalogue) : undefined;
  for (const [path, item] of Object.entries<Record<string, any>>(document.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const where = `${method.toUpperCase()} ${path} in ${file}`;
      if (typeof op.operationId !== 'string') throw new Error(`Contract: ${where} has no operationId`);
      if (operations.has(op.operationId)) throw new Error(`Contract: operationId ${op.operationId} is used twice`);
      const scopes = op['x-required-scopes'];
      if (opts.requireScopes && !(Array.isArray(scopes) && scopes.every((s) => typeof s === 'string'))) {
        throw new Error(`Contract: ${where} needs x-required-scopes (an array of scope names)`);
      }
      const unknown = known && Array.isArray(scopes) ? scopes.filter((x) => !known.has(x)) : [];
      if (unknown.length > 0) {
        throw new Error(`Contract: ${where} requires scope ${unknown.map((x) => `"${x}"`).join(', ')}, which is not in the scope catalogue (components.schemas.Scope)`);
      }
      if (op['x-project-scoped'] === false && (scopes ?? []).length > 0) {
        // Scopes are held per project; an operation without a selected project cannot check them.
        throw new Error(`Contract: ${where} is x-project-scoped: false, so its x-required-scopes must be empty`);
      }
      operations.set(op.operationId, {
        operationId: op.operationId,
        method,
        path,
        requiredScopes: scopes ?? [],
        secured: Array.isArray(op.security) ? op.security.length > 0 : rootSecured,
        projectScoped: op['x-project-scoped'] !== false,
        idempotent: op['x-idempotent'] === true,
        bodyLimit: typeof op['x-body-limit'] === 'number' ? op['x-body-limit'] : DEFAULT_BODY_LIMIT,
        bodyLimitCode: op['x-body-limit-code'] === 'file_too_large' ? 'file_too_large' : 'payload_too_large',
        uploadMetered: op['x-upload-metered'] === true,
      });
    }
  }
  return { document, operations };
}
