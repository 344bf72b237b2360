/**
 * Builds the request pipeline of a contract: express-openapi-validator matches the path and
 * method to an operation (404/405 otherwise), our policy middleware runs where the validator's
 * own security step would, the body is parsed and validated, and the operation's handler is
 * found by operationId. There is no hand-kept route list: an operation without a handler stops
 * start-up.
 */
import express, { type Request, type RequestHandler } from 'express';
import { pipeline as pipeStreams } from 'node:stream/promises';
import * as OpenApiValidator from 'express-openapi-validator';
import { direct } from './validator-speedups.js';
import type { Contract, OperationInfo } from './contract.js';
import type { AppDeps } from './app-deps.js';
import type { Handler, HandlerMap, Reply } from './handler-types.js';
import { responseCheck as contractResponseCheck } from './contract-checks/response-check.js';
import { nameRequest } from '../lib/platform/tracing/spans.js';
import { sendJson } from './json-response.js';
import { ApiError } from '../lib/platform/errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../lib/platform/json-depth.js';

export function operationOf(req: Request, contract: Contract): OperationInfo {
  const id = (req as any).openapi?.schema?.operationId;
  const op = typeof id === 'string' ? contract.operations.get(id) : undefined;
  if (!op) throw new Error(`No operation matched ${req.method} ${req.path}`);
  return op;
}

function tooDeep(): ApiError {
  const message = `nests more than ${MAX_JSON_DEPTH} levels of arrays and objects`;
  return new ApiError('invalid_request', `Invalid request: body ${message}.`, { fields: [{ field: 'body', message }], max_depth: MAX_JSON_DEPTH });
}

/** Every operation has exactly one handler, and every handler an operation. */
export function assertHandlers(contract: Contract, handlers: Record<string, unknown>, name: string): void {
  const missing = [...contract.operations.keys()].filter((id) => typeof handlers[id] !== 'function');
  const extra = Object.keys(handlers).filter((id) => !contract.operations.has(id));
  if (missing.length || extra.length) {
    throw new Error(
      `${name}: handlers and contract disagree.` +
        (missing.length ? ` Operations without a handler: ${missing.join(', ')}.` : '') +
        (extra.length ? ` Handlers without an operation: ${extra.join(', ')}.` : ''),
    );
  }
}

const APPLIES = Symbol('the operations a step applies to');

/**
 * A step that some operations need (an upload's budget, a project's selection, idempotency): each
 * operation's pipeline is composed at start-up from the steps that apply to it, so a request pays
 * nothing for the others. A step without this mark applies to every operation.
 */
export function onlyFor(applies: (op: OperationInfo) => boolean, step: RequestHandler): RequestHandler {
  return Object.assign(step, { [APPLIES]: applies });
}

/** One composed pipeline per operation, of the steps that apply to it; chosen by the operation the validator matched. */
function perOperation(contract: Contract, steps: RequestHandler[]): RequestHandler {
  const pipelines = new Map<string, RequestHandler>();
  for (const op of contract.operations.values()) {
    pipelines.set(op.operationId, compose(steps.filter((s) => (s as { [APPLIES]?: (op: OperationInfo) => boolean })[APPLIES]?.(op) ?? true)));
  }
  return (req, res, next) => pipelines.get(operationOf(req, contract).operationId)!(req, res, next);
}

export interface PipelineOptions {
  contract: Contract;
  handlers: HandlerMap;
  deps: AppDeps;
  /** Only these paths belong to this contract; others pass through untouched. */
  pathPrefix: string;
  /** Runs after the operation is known and before the body is read: credentials, limits, scopes. */
  policy: RequestHandler[];
  /** Runs after the body is validated, right before the handler (e.g. idempotency). */
  beforeHandler?: RequestHandler[];
  name: string;
}

export function contractPipeline(opts: PipelineOptions): RequestHandler {
  const { contract, handlers, deps, pathPrefix, policy, beforeHandler = [], name } = opts;
  assertHandlers(contract, handlers, name);
  const validator = OpenApiValidator.middleware({
    apiSpec: structuredClone(contract.document) as any,
    validateRequests: { allowUnknownQueryParameters: false, allErrors: true },
    validateResponses: deps.validateResponses ? { removeAdditional: false } : false,
    validateSecurity: false,
    ignorePaths: (path: string) => !path.startsWith(pathPrefix),
    validateApiSpec: deps.checkContracts ?? true,
    // No multer: it would buffer multipart files in memory. Upload operations stream their own
    // bodies (middleware/upload-body.ts) and the validator checks the fields they leave in req.body.
    fileUploader: false,
  }) as unknown as RequestHandler[];
  const has = (n: string) => validator.some((mw) => mw.name === n);
  if (!has('metadataMiddleware') || !has('securityMiddleware') || !has('pathParamsMiddleware')) {
    throw new Error('express-openapi-validator changed: pathParamsMiddleware/metadataMiddleware/securityMiddleware not found');
  }
  // Response validation hooks res.json: install it right after the operation is known, so error
  // envelopes written by the policy step are validated too.
  const responseCheck = validator.filter((mw) => mw.name === 'responseMiddleware');
  const steps = validator
    .filter((mw) => mw.name !== 'responseMiddleware')
    .map((mw) =>
      mw.name === 'pathParamsMiddleware'
        ? onceSettled(mw)
        : mw.name === 'metadataMiddleware'
          ? named(direct(mw, 'metadata') as RequestHandler, mw.name)
          : mw.name === 'requestMiddleware'
            ? named(direct(mw, 'request') as RequestHandler, mw.name)
            : mw,
    );
  const meta = steps.findIndex((mw) => mw.name === 'metadataMiddleware');
  const at = steps.findIndex((mw) => mw.name === 'securityMiddleware');

  // The body is read only once the caller is known, so an anonymous caller cannot make us parse.
  // Each operation's limit comes from its `x-body-limit` (one parser per distinct limit). Its
  // nesting is judged before the validator or a handler walks it (lib/platform/json-depth.ts).
  const parsers = new Map<number, RequestHandler>();
  const body: RequestHandler = (req, res, next) => {
    const limit = operationOf(req, contract).bodyLimit;
    let parser = parsers.get(limit);
    if (!parser) parsers.set(limit, (parser = express.json({ limit })));
    return parser(req, res, (err?: unknown) => {
      if (err) return next(err);
      if (nestsDeeperThan(req.body, MAX_JSON_DEPTH)) return next(tooDeep());
      next();
    });
  };

  const dispatch: RequestHandler = async (req, res) => {
    const op = operationOf(req, contract);
    nameRequest(req, req.method, req.baseUrl + op.path, op.operationId);
    const reply: Reply<any> = await handlers[op.operationId](
      {
        params: (req as any).openapi?.pathParams ?? {},
        query: req.query as any,
        body: req.body,
        auth: req.auth,
        requestId: req.requestId,
        idempotencyKey: req.idempotencyKey,
        http: req,
      },
      deps,
    );
    if ('raw' in reply) {
      sendJson(req, res, reply.status ?? 200, reply.raw);
    } else if ('stream' in reply) {
      res.status(reply.status ?? 200).set(reply.headers);
      // A read error mid-stream can only cut the connection: the status line has gone.
      await pipeStreams(reply.stream, res).catch((e) => {
        deps.logger.warn(`stream to the client ended early: ${e instanceof Error ? e.message : String(e)}`);
        res.destroy();
      });
    } else {
      if (reply.headers) res.set(reply.headers);
      if (reply.keyAnswered) req.idempotencyAnswered = true;
      sendJson(req, res, reply.status ?? 200, { success: true, data: reply.data });
    }
  };

  // Up to the validator's metadata step the operation is unknown; from there on, each operation
  // runs its own pipeline, composed here once.
  const pipeline = compose([
    ...steps.slice(0, meta + 1),
    perOperation(contract, [
      ...responseCheck,
      // Ours after the validator's, so it sees the handler's body first (http/contract-checks/response-check.ts);
      // with no sample to check (production's default) it is not in the pipeline at all.
      ...(deps.config.responseCheckSample > 0
        ? [contractResponseCheck({ contract, sample: deps.config.responseCheckSample, logger: deps.logger, pathPrefix, onViolation: deps.onResponseViolation })]
        : []),
      // The validator's security step stands here, where our policy runs; with validateSecurity off
      // it only passes on, a promise hop per request, so it is left out.
      ...steps.slice(meta + 1, at),
      ...policy,
      body,
      ...steps.slice(at + 1),
      ...beforeHandler,
      dispatch,
    ]),
  ]);
  // A request of another contract skips the whole pipeline at once.
  return (req, res, next) => (req.path.startsWith(pathPrefix) ? pipeline(req, res, next) : next());
}

/**
 * The validator's first step only waits for its spec to load (and installs path parameters on the
 * app once); after it has passed once it has nothing left to do but a promise hop per request.
 */
function onceSettled(step: RequestHandler): RequestHandler {
  let settled = false;
  return named(
    (req, res, next) =>
      settled
        ? next()
        : step(req, res, (err?: unknown) => {
            if (!err) settled = true;
            next(err);
          }),
    step.name,
  );
}

/** The pipeline finds the validator's steps by name: wrappers keep it. */
function named(fn: RequestHandler, name: string): RequestHandler {
  Object.defineProperty(fn, 'name', { value: name });
  return fn;
}

/**
 * Runs `steps` as one middleware, in order, as Express's router would run them as separate layers
 * (an error, thrown or passed to next, or a rejected promise leaves for the app's error handler),
 * without the router's per-layer work (path matching, parameter processing, prefix trimming),
 * which cost more than most steps themselves on every request.
 */
export function compose(steps: RequestHandler[]): RequestHandler {
  return (req, res, out) => {
    let i = 0;
    const next = (err?: unknown): void => {
      if (err) return out(err);
      if (i === steps.length) return out();
      const step = steps[i++];
      try {
        const ret = step(req, res, next) as unknown;
        if (typeof (ret as Promise<unknown> | undefined)?.then === 'function') (ret as Promise<unknown>).then(undefined, (e: unknown) => next(e || new Error('Rejected promise')));
      } catch (e) {
        next(e);
      }
    };
    next();
  };
}

