/**
 * jest's module runtime, with what a jest worker can keep from one test file to the next without
 * sharing a module instance: each transform's output, and V8's code cache of each module it
 * compiles. Every test file still reads, loads and evaluates every module afresh in its own context
 * (jest's isolation); it no longer transforms and parses the same unchanged sources again. The keys
 * are the file's path and its exact source: a changed file is transformed and compiled anew.
 *
 * CommonJS: jest loads this with require (jest.config.js names it as `runtime`).
 */
const vm = require('node:vm');
const JestRuntime = require('jest-runtime').default;

// The V8 code cache of each compiled source, by file name: the source it was made from, and its bytes.
const codeCache = new Map();
const cached = (filename, source) => {
  const entry = filename ? codeCache.get(filename) : undefined;
  return entry && entry.source === source ? entry.data : undefined;
};

const DYNAMIC_IMPORT = /\bimport\s*\(/;
const compileFunction = vm.compileFunction;
if (!compileFunction.__codeCached) {
  vm.compileFunction = function (code, params, options = {}) {
    if (DYNAMIC_IMPORT.test(code)) return compileFunction.call(this, code, params, options);
    const data = cached(options.filename, code);
    if (data) return compileFunction.call(this, code, params, { ...options, cachedData: data });
    const fn = compileFunction.call(this, code, params, { ...options, produceCachedData: true });
    if (options.filename && fn.cachedData) codeCache.set(options.filename, { source: code, data: fn.cachedData });
    return fn;
  };
  vm.compileFunction.__codeCached = true;
}

if (vm.SourceTextModule && !vm.SourceTextModule.__codeCached) {
  const Original = vm.SourceTextModule;
  vm.SourceTextModule = class SourceTextModule extends Original {
    static __codeCached = true;
    constructor(code, options = {}) {
      // A module compiled from a cache sends its dynamic import() to the runtime of the file that
      // made the cache (Node 20 keeps the first compile's host options): such modules compile afresh.
      const cacheable = options.identifier && !DYNAMIC_IMPORT.test(code);
      const data = cacheable ? cached(options.identifier, code) : undefined;
      super(code, data ? { ...options, cachedData: data } : options);
      if (cacheable && !data) codeCache.set(options.identifier, { source: code, data: this.createCachedData() });
    }
  };
}

// A transform's output by file and options, with the source it was made from: unchanged during a
// run. (Not the files' bytes: jest empties a runtime's file cache when its file ends, and keeping
// them across files measured no difference: docs/testing.md.)
const transforms = new Map();
const memo = (transformer) => {
  if (transformer.__memoised) return transformer;
  const transform = transformer.transform.bind(transformer);
  const transformAsync = transformer.transformAsync.bind(transformer);
  const lookup = (filename, options, source) => {
    const key = `${filename}\0${JSON.stringify(options)}`;
    const entry = transforms.get(key);
    return { key, out: entry && entry.source === source ? entry.out : undefined };
  };
  transformer.transform = (filename, options, source) => {
    const { key, out } = lookup(filename, options, source);
    if (out) return out;
    const made = transform(filename, options, source);
    transforms.set(key, { source, out: made });
    return made;
  };
  transformer.transformAsync = async (filename, options, source) => {
    const { key, out } = lookup(filename, options, source);
    if (out) return out;
    const made = await transformAsync(filename, options, source);
    transforms.set(key, { source, out: made });
    return made;
  };
  transformer.__memoised = true;
  return transformer;
};

class Runtime extends JestRuntime {
  constructor(config, environment, resolver, transformer, cacheFS, ...rest) {
    super(config, environment, resolver, memo(transformer), cacheFS, ...rest);
  }
}

module.exports = Runtime;
module.exports.default = Runtime;
