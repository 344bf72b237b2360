/**
 * The response check: a body the service sends is compared with the contract's schema for its
 * operation and status. In tests every response is checked and a violation fails the test that
 * caused it, naming the operation, the JSON path and the rule; in production a sample of
 * responses (`RESPONSE_CHECK_SAMPLE`, 0..1, default 0) is checked after the answer has left and
 * a violation is only logged: the check never changes an answer.
 */
import type { RequestHandler } from 'express';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Contract } from '../contract.js';
import type { Logger } from '../../lib/platform/logger.js';

export interface ResponseViolation {
  operationId: string;
  /** `GET /v1/contacts/{id}` */
  operation: string;
  status: number;
  /** JSON pointer into the body (`/data/contact/internal_note`); empty for the body itself. */
  path: string;
  /** The schema keyword that failed (`additionalProperties`, `required`, `type`, …) or `status` for an undeclared status. */
  rule: string;
  message: string;
}

/** One line per violation: what a failing test or a log line shows. */
export function describeViolation(v: ResponseViolation): string {
  return `${v.operationId} (${v.operation}) answered ${v.status} with a body that breaks the contract at ${v.path || '(body)'}: ${v.message} [rule: ${v.rule}]`;
}

// ajv-formats is CommonJS with `exports.default`; under NodeNext its default import is the module.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => void;

const escape = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

function pathOf(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  const extra = p.additionalProperty ?? p.unevaluatedProperty ?? p.missingProperty;
  return typeof extra === 'string' ? `${e.instancePath}/${escape(extra)}` : e.instancePath;
}

/** Validators of one contract's responses, compiled on first use per operation and status. */
export class ResponseChecker {
  private readonly ajv: Ajv2020;
  private readonly cache = new Map<string, ValidateFunction | 'no-content' | undefined>();

  constructor(private readonly contract: Contract) {
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, validateFormats: true });
    addFormats(this.ajv);
    // OpenAPI's own formats, as express-openapi-validator reads them.
    this.ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
    this.ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
    for (const name of ['float', 'double']) this.ajv.addFormat(name, { type: 'number', validate: () => true });
    for (const name of ['byte', 'binary', 'password', 'media-range']) this.ajv.addFormat(name, true);
    const { paths, components, webhooks } = contract.document;
    this.ajv.addSchema({ $id: 'contract:root', paths, components, webhooks }, undefined, undefined, false);
  }

  /** The violations of `body` as the answer `status` of `operationId`; empty when it conforms. */
  check(operationId: string, status: number, body: unknown): ResponseViolation[] {
    const op = this.contract.operations.get(operationId);
    if (!op) return [];
    const operation = `${op.method.toUpperCase()} ${op.path}`;
    const base = { operationId, operation, status };
    const key = `${operationId} ${status}`;
    if (!this.cache.has(key)) this.cache.set(key, this.compile(op.path, op.method, status));
    const validate = this.cache.get(key);
    if (validate === undefined) {
      return [{ ...base, path: '', rule: 'status', message: `status ${status} is not a declared response of this operation` }];
    }
    if (validate === 'no-content') {
      return body === undefined ? [] : [{ ...base, path: '', rule: 'content', message: 'this response declares no body' }];
    }
    if (validate(body)) return [];
    return (validate.errors ?? []).map((e) => ({ ...base, path: pathOf(e), rule: e.keyword, message: e.message ?? 'is invalid' }));
  }

  private compile(route: string, method: string, status: number): ValidateFunction | 'no-content' | undefined {
    const responses: Record<string, unknown> = this.contract.document.paths?.[route]?.[method]?.responses ?? {};
    const code = [String(status), `${String(status)[0]}XX`, 'default'].find((c) => c in responses);
    if (!code) return undefined;
    let response = responses[code] as Record<string, any>;
    let pointer = ['paths', route, method, 'responses', code];
    if (typeof response?.$ref === 'string' && response.$ref.startsWith('#/')) {
      pointer = response.$ref.slice(2).split('/').map((s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
      response = pointer.reduce((node: any, k) => node?.[k], this.contract.document);
    }
    const media = Object.keys(response?.content ?? {}).find((m) => /^application\/(.+\+)?json\b/.test(m));
    if (!media || response.content[media].schema === undefined) return 'no-content';
    const ref = `contract:root#/${[...pointer, 'content', media, 'schema'].map(escape).join('/')}`;
    return this.ajv.compile({ $ref: ref });
  }
}

export interface ResponseCheckOptions {
  contract: Contract;
  /** Fraction of responses checked, 0..1 (1 in tests). */
  sample: number;
  logger: Logger;
  /** Only paths of this contract. */
  pathPrefix: string;
  /** Told of every violation (tests record them to fail the test that caused them). */
  onViolation?: (violations: ResponseViolation[]) => void;
  random?: () => number;
}

/**
 * Hooks `res.json` once the operation is known. The answer is sent first, exactly as the handler
 * wrote it; the check runs after, and any failure of the check itself is logged and swallowed.
 */
export function responseCheck(opts: ResponseCheckOptions): RequestHandler {
  const { sample, logger, pathPrefix, onViolation, random = Math.random } = opts;
  if (!(sample > 0)) return (_req, _res, next) => next();
  const checker = new ResponseChecker(opts.contract);
  return (req, res, next) => {
    if (!req.path.startsWith(pathPrefix) || !(random() < sample)) return next();
    const original = res.json;
    res.json = function json(this: typeof res, body: unknown) {
      res.json = original;
      const status = res.statusCode;
      const result = original.call(this, body);
      try {
        const operationId = (req as any).openapi?.schema?.operationId;
        const violations = typeof operationId === 'string' ? checker.check(operationId, status, body) : [];
        if (violations.length > 0) {
          for (const v of violations) {
            logger.warn('response violates the contract', {
              operationId: v.operationId, status: v.status, path: v.path, rule: v.rule, problem: v.message, request_id: req.requestId,
            });
          }
          onViolation?.(violations);
        }
      } catch (err) {
        logger.warn('response check failed', { error: err instanceof Error ? err.message : String(err), request_id: req.requestId });
      }
      return result;
    };
    next();
  };
}
