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
