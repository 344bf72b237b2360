/**
 * express-openapi-validator 5.6 matches each request by compiling every route's path with
 * path-to-regexp on every request (openapi.metadata.js, lookupRoute), which made route matching
 * the largest cost of a small request and grow with the number of operations. pathToRegexp is a
 * pure function of its arguments, so its results are memoised here, in the one copy of
 * path-to-regexp the validator loads. Imported once, for its effect, by http/dispatch.ts.
 */
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const validatorDir = path.dirname(require.resolve('express-openapi-validator'));
const ptr = require(require.resolve('path-to-regexp', { paths: [validatorDir] })) as {
  pathToRegexp: (path: unknown, options?: unknown) => unknown;
  __memoised?: boolean;
};

if (!ptr.__memoised) {
  const original = ptr.pathToRegexp;
  const cache = new Map<string, unknown>();
  ptr.pathToRegexp = (p: unknown, options?: unknown) => {
    if (typeof p !== 'string') return original(p, options);
    const o = (options ?? {}) as { sensitive?: boolean; strict?: boolean; end?: boolean; trailing?: boolean; delimiter?: string };
    const key = `${p}\u0000${o.sensitive}${o.strict}${o.end}${o.trailing}${o.delimiter}${Object.keys(o).length}`;
    let compiled = cache.get(key);
    if (compiled === undefined) {
      compiled = original(p, options);
      if (cache.size < 10_000) cache.set(key, compiled);
    }
    return compiled;
  };
  ptr.__memoised = true;
}

/**
 * The same module's route lookup (applyOpenApiMetadata) also walks every route on every request,
 * building a cache key, two settings lookups and a schema lookup per route before the regular
 * expression runs. Here it is the same lookup compiled once per contract: each route's expression
 * and parameter names in the validator's own order (the first match wins, as before), plus a map
 * from each literal path of a route without parameters to its route, used when no earlier route
 * matches that path. What it sets on the request (`req.openapi`, `req.params`) and the errors it
 * raises (404, 405 with Allow, 400 on a malformed escape) are the validator's, unchanged.
 */
interface OpenApiContextLike {
  expressRouteMap: Record<string, Record<string, unknown> & { basePath: string }>;
  openApiRouteMap: Record<string, Record<string, unknown>>;
  apiDoc: { paths: Record<string, Record<string, unknown>> };
  useRequestUrl: boolean;
  ignoreUndocumented: boolean;
  serial: number;
  shouldIgnoreRoute(path: string): boolean;
  isManagedRoute(path: string): boolean;
  routePair(route: string): { expressRoute: string; openApiRoute: string };
}
interface CompiledRoute {
  expressRoute: string;
  openApiRoute: string;
  pathKey: string;
  regexp: RegExp;
  paramKeys: string[];
}
type Next = (err?: unknown) => void;
type Req = { path: string; baseUrl: string; url: string; originalUrl: string; method: string; app: { enabled(name: string): boolean }; openapi?: unknown; params?: unknown };

const metadata = require(path.join(validatorDir, 'middlewares', 'openapi.metadata.js')) as {
  applyOpenApiMetadata: (context: OpenApiContextLike, responseApiDoc?: { paths: Record<string, Record<string, unknown>> }) => (req: Req, res: unknown, next: Next) => void;
  __compiled?: boolean;
};
const types = require(path.join(validatorDir, 'framework', 'types.js')) as Record<'NotFound' | 'MethodNotAllowed' | 'BadRequest', new (o: object) => Error>;
const { httpMethods } = require(path.join(validatorDir, 'middlewares', 'parsers', 'schema.preprocessor.js')) as { httpMethods: Set<string> };

const COMPILED = Symbol.for('messaging-service.validator.metadata');
const VALIDATES = Symbol.for('messaging-service.validator.request');

/**
 * The validator's metadata and request steps wait on its spec-loading promise on every request (a
 * promise hop each) before calling the function they built on first use. Once that function has
 * run for a request (it marks the request), the pipeline calls it directly: the promise has settled
 * for good, and the function is the same.
 */
export function direct(step: (req: any, res: any, next: Next) => unknown, kind: 'metadata' | 'request'): (req: any, res: any, next: Next) => unknown {
  const mark = kind === 'metadata' ? COMPILED : VALIDATES;
  let compiled: ((req: any, res: any, next: Next) => unknown) | undefined;
  return (req, res, next) => {
    if (compiled) return compiled(req, res, next);
    return step(req, res, (err?: unknown) => {
      compiled ??= req[mark];
      next(err);
    });
  };
}

const validatorModule = require(path.join(validatorDir, 'openapi.validator.js')) as {
  OpenApiValidator: { prototype: { requestValidationMiddleware: (apiDoc: unknown) => (req: any, res: any, next: Next) => unknown; __marked?: boolean } };
};
const proto = validatorModule.OpenApiValidator.prototype;
if (!proto.__marked) {
  const build = proto.requestValidationMiddleware;
  proto.requestValidationMiddleware = function (this: unknown, apiDoc: unknown) {
    const validate = build.call(this, apiDoc);
    // Marks only the first request: the pipeline takes the function from it (direct, above).
    let first = true;
    const marked = (req: any, res: any, next: Next) => {
      if (first) {
        first = false;
        req[VALIDATES] = marked;
      }
      return validate(req, res, next);
    };
    return marked;
  };
  proto.__marked = true;
}

if (!metadata.__compiled) {
  metadata.applyOpenApiMetadata = (context, responseApiDoc) => {
    // Compiled per pair of the app's routing settings (read per request, as the validator does).
    const compiled = new Map<string, { routes: CompiledRoute[]; literal: Map<string, CompiledRoute> }>();
    const compile = (sensitive: boolean, strict: boolean) => {
      const routes: CompiledRoute[] = [];
      const literal = new Map<string, CompiledRoute>();
      for (const [expressRoute, methods] of Object.entries(context.expressRouteMap)) {
        const { openApiRoute } = context.routePair(expressRoute);
        const r = ptr.pathToRegexp(expressRoute, { sensitive, strict }) as { regexp: RegExp; keys: Array<{ name: string }> };
        const route = { expressRoute, openApiRoute, pathKey: openApiRoute.substring(methods.basePath.length), regexp: r.regexp, paramKeys: r.keys.map((k) => k.name) };
        if (route.paramKeys.length === 0 && route.regexp.test(expressRoute) && !literal.has(expressRoute) && !routes.some((e) => e.regexp.test(expressRoute))) literal.set(expressRoute, route);
        routes.push(route);
      }
      return { routes, literal };
    };
    const lookupRoute = (req: Req) => {
      const url = context.useRequestUrl ? req.url : req.originalUrl;
      const q = url.indexOf('?');
      const p = q < 0 ? url : url.slice(0, q);
      const method = req.method.toLowerCase();
      const sensitive = !!req.app.enabled('case sensitive routing');
      const strict = !!req.app.enabled('strict routing');
      const settings = `${sensitive}${strict}`;
      let table = compiled.get(settings);
      if (!table) compiled.set(settings, (table = compile(sensitive, strict)));
      let route = table.literal.get(p);
      let match: RegExpExecArray | null = null;
      if (!route) {
        for (const r of table.routes) {
          match = r.regexp.exec(p);
          if (match) {
            route = r;
            break;
          }
        }
        if (!route) return null;
      }
      const pathParams: Record<string, string> = {};
      if (match) {
        try {
          for (let i = 0; i < route.paramKeys.length; i++) pathParams[route.paramKeys[i]] = decodeURIComponent(match[i + 1]);
        } catch {
          throw new types.BadRequest({ path: req.path, message: `malformed uri'` });
        }
      }
      return {
        schema: context.apiDoc.paths[route.pathKey][method],
        expressRoute: route.expressRoute,
        openApiRoute: route.openApiRoute,
        pathParams,
        serial: -1,
        _responseSchema: responseApiDoc?.paths[route.pathKey][method],
      };
    };
    let first = true;
    const middleware = (req: Req, _res: unknown, next: Next): void => {
      // Tells the pipeline, on the first request, which function the validator's step ends in
      // (direct, above).
      if (first) {
        first = false;
        (req as unknown as Record<symbol, unknown>)[COMPILED] = middleware;
      }
      const p = req.path.startsWith(req.baseUrl) ? req.path : `${req.baseUrl}/${req.path}`;
      if (context.shouldIgnoreRoute(p)) return next();
      const matched = lookupRoute(req);
      if (matched) {
        const { expressRoute, openApiRoute, pathParams, schema } = matched;
        if (!schema) {
          if (context.ignoreUndocumented) return next();
          throw new types.MethodNotAllowed({
            path: req.path,
            message: `${req.method} method not allowed`,
            headers: { Allow: Object.keys(context.openApiRouteMap[openApiRoute]).filter((key) => httpMethods.has(key.toLowerCase())).join(', ') },
          });
        }
        const openapi: Record<string, unknown> = { expressRoute, openApiRoute, pathParams, schema, serial: context.serial };
        if (responseApiDoc) openapi._responseSchema = matched._responseSchema;
        req.openapi = openapi;
        req.params = pathParams;
      } else if (context.isManagedRoute(p) && !context.ignoreUndocumented) {
        throw new types.NotFound({ path: req.path, message: 'not found' });
      }
      next();
    };
    return middleware;
  };
  metadata.__compiled = true;
}

/**
 * The validator builds an OpenAPISchemaValidator for every contract it loads, compiling the whole
 * OpenAPI meta-schema with ajv each time (framework/index.js, initialize), although it depends only
 * on the OpenAPI version and on whether the spec is validated. Compiled once per such pair here and
 * shared: its `validate` is synchronous and its errors are read right after the call. Without
 * `validateApiSpec` the validator never calls it, so nothing is compiled.
 */
type SchemaValidator = { validate(doc: unknown): { errors: unknown[] } };
const schemaValidatorModule = require(path.join(validatorDir, 'framework', 'openapi.schema.validator.js')) as {
  OpenAPISchemaValidator: new (opts: { version: string; validateApiSpec: boolean }) => SchemaValidator;
  __memoised?: boolean;
};
if (!schemaValidatorModule.__memoised) {
  const Original = schemaValidatorModule.OpenAPISchemaValidator;
  const built = new Map<string, SchemaValidator>();
  const UNUSED: SchemaValidator = {
    validate() {
      throw new Error('express-openapi-validator changed: it validates the spec although validateApiSpec is off');
    },
  };
  // Called with `new`: a constructor that returns an object makes that object the result.
  schemaValidatorModule.OpenAPISchemaValidator = function OpenAPISchemaValidator(opts: { version: string; validateApiSpec: boolean }) {
    if (!opts.validateApiSpec) return UNUSED;
    const key = `${opts.version}\u0000${!!opts.validateApiSpec}`;
    let validator = built.get(key);
    if (!validator) built.set(key, (validator = new Original(opts)));
    return validator;
  } as unknown as typeof Original;
  schemaValidatorModule.__memoised = true;
}

/**
 * The validator compiles each operation's request schemas (parameters, body) as a schema that
 * carries the contract's whole `paths` and `components` beside them, so that a `$ref` inside can
 * resolve; ajv walked all of it on every add (getSchemaRefs), twice an operation, and compiled the
 * components an operation refers to again under each operation's root. A reference into `#/paths`
 * is the only reason to carry `paths`, and the contracts have none. So here `components` is added
 * to each of the validator's ajv instances once, under an id of its own, and an operation's
 * schema is compiled alone, its `#/components/…` references pointing into that id: the same
 * schemas and the same validation, each walked once per instance.
 */
const util = require(path.join(validatorDir, 'middlewares', 'util.js')) as {
  useAjvCache: (ajv: AjvLike, schema: Record<string, unknown>, key: string) => unknown;
  __trimmed?: boolean;
};
type AjvLike = { getSchema(key: string): unknown; addSchema(schema: object, key: string): unknown };
// An absolute URI: the validator's keys (`POST-/path-type`) are the base a relative reference resolves against.
const COMPONENTS_ID = 'urn:eov:components';
if (!util.__trimmed) {
  const useAjvCache = util.useAjvCache;
  const refersToPaths = new WeakMap<object, boolean>();
  const refersInto = (node: unknown): boolean => JSON.stringify(node ?? null).includes('"#/paths');
  // The components each ajv instance holds (an instance serves one contract).
  const added = new WeakMap<object, object>();
  util.useAjvCache = (ajv, schema, key) => {
    const { paths, components, ...rest } = schema;
    if (paths === undefined || components === undefined || components === null || typeof components !== 'object') return useAjvCache(ajv, schema, key);
    let viaComponents = refersToPaths.get(components);
    if (viaComponents === undefined) refersToPaths.set(components, (viaComponents = refersInto(components)));
    if (viaComponents || refersInto(rest)) return useAjvCache(ajv, schema, key);
    const held = added.get(ajv);
    if (held !== undefined && held !== components) return useAjvCache(ajv, { components, ...rest }, key);
    if (held === undefined) {
      ajv.addSchema({ components }, COMPONENTS_ID);
      added.set(ajv, components);
    }
    return useAjvCache(ajv, rebaseRefs(rest, `${COMPONENTS_ID}#/components/`) as Record<string, unknown>, key);
  };
  util.__trimmed = true;
}

/** A copy of `node` whose `#/components/…` references start with `prefix` instead; everything else is kept as is. */
export function rebaseRefs(node: unknown, prefix: string): unknown {
  if (Array.isArray(node)) return node.map((n) => rebaseRefs(n, prefix));
  if (Object.prototype.toString.call(node) !== '[object Object]') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node as object)) {
    out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/components/') ? prefix + v.slice('#/components/'.length) : rebaseRefs(v, prefix);
  }
  return out;
}

/**
 * At start the validator's preprocessor resolves each `$ref` it meets with `ajv.getSchema(ref)`
 * and keeps only `.schema`: the object at that pointer. getSchema compiles a validator to return
 * it, and the preprocessor's ajv is dropped afterwards, so every component and response schema was
 * compiled once for nothing (about a second a start). Here the object is looked up by its pointer,
 * the same object getSchema returned (ajv keeps the object it was given); refs that are not local
 * pointers take the validator's own path.
 */
type Preprocessor = { apiDoc: Record<string, unknown>; resolvedSchemaCache: Map<string, unknown>; resolveSchema(schema: unknown): unknown };
const preprocessorModule = require(path.join(validatorDir, 'middlewares', 'parsers', 'schema.preprocessor.js')) as {
  SchemaPreprocessor: { prototype: Preprocessor & { __byPointer?: boolean } };
};
const preprocessor = preprocessorModule.SchemaPreprocessor.prototype;
if (!preprocessor.__byPointer) {
  const resolveSchema = preprocessor.resolveSchema;
  preprocessor.resolveSchema = function (this: Preprocessor, schema: unknown) {
    const ref = (schema as { $ref?: unknown } | null | undefined)?.$ref;
    if (typeof ref !== 'string' || !ref.startsWith('#/')) return resolveSchema.call(this, schema);
    if (this.resolvedSchemaCache.has(ref)) return this.resolvedSchemaCache.get(ref);
    let node: unknown = this.apiDoc;
    for (const segment of ref.slice(2).split('/')) {
      node = node && typeof node === 'object' ? (node as Record<string, unknown>)[segment.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    }
    if (node === undefined) return resolveSchema.call(this, schema);
    this.resolvedSchemaCache.set(ref, node);
    return node;
  };
  preprocessor.__byPointer = true;
}

/**
 * The validator bundles the contract it is given with json-schema-ref-parser (framework/index.js,
 * loadSpec), which crawls the whole document to bring external references in. The contracts are
 * one document whose every `$ref` is a local pointer (`#/…`), for which bundling returns the same
 * document (tests/http/validator-speedups.test.ts checks it of each shipped contract), so such a
 * document is used as given; one with any other reference is bundled as before.
 */
const frameworkModule = require(path.join(validatorDir, 'framework', 'index.js')) as {
  OpenAPIFramework: { prototype: { loadSpec(spec: unknown, refParser?: unknown): unknown; __localOnly?: boolean } };
};
const framework = frameworkModule.OpenAPIFramework.prototype;
if (!framework.__localOnly) {
  const loadSpec = framework.loadSpec;
  framework.loadSpec = function (this: unknown, spec: unknown, refParser?: unknown) {
    const dereference = (refParser as { mode?: string } | undefined)?.mode === 'dereference';
    if (!dereference && spec && typeof spec === 'object' && onlyLocalRefs(spec)) return Promise.resolve(spec);
    return loadSpec.call(this, spec, refParser);
  };
  framework.__localOnly = true;
}

/** True when every `$ref` in the document is a pointer into the document itself. */
export function onlyLocalRefs(node: unknown): boolean {
  if (Array.isArray(node)) return node.every(onlyLocalRefs);
  if (!node || typeof node !== 'object') return true;
  for (const [key, value] of Object.entries(node)) {
    if (key === '$ref' ? typeof value !== 'string' || !value.startsWith('#/') : !onlyLocalRefs(value)) return false;
  }
  return true;
}
