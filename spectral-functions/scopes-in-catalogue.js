// Spectral rule: every x-required-scopes name is in the contract's scope catalogue
// (components.schemas.Scope.enum). A typo would make the operation unreachable: no key can hold it.
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export default function scopesInCatalogue(document) {
  const catalogue = document?.components?.schemas?.Scope?.enum;
  if (!Array.isArray(catalogue)) return [];
  const known = new Set(catalogue);
  const results = [];
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      const scopes = item?.[method]?.['x-required-scopes'];
      if (!Array.isArray(scopes)) continue;
      scopes.forEach((scope, i) => {
        if (!known.has(scope)) {
          results.push({
            message: `${method.toUpperCase()} ${path} requires scope "${scope}", which is not in the scope catalogue (components.schemas.Scope).`,
            path: ['paths', path, method, 'x-required-scopes', i],
          });
        }
      });
    }
  }
  return results;
}
