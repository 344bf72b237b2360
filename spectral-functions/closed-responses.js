// Spectral rule (and the walker behind `npm run contract:close`): every object the service sends
// refuses properties it does not declare. A field that leaks out of a handler (an internal column,
// a spread object) then fails the response check instead of reaching integrators unnoticed.
//
// "What the service sends" is every JSON response body (paths and components.responses) and every
// webhook payload (the `webhooks` section's request bodies). In those, an object schema (`type:
// object` or `properties`) must say `additionalProperties` (false, or true / a schema for a
// deliberate free-form map), and a schema composed with `allOf` must say `unevaluatedProperties:
// false` (its inline members are then closed by it). A component closed with `additionalProperties:
// false` and used as an `allOf` member must declare every property its siblings add, or the
// composition refuses every valid value.
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const isJson = (mediaType) => /^application\/(.+\+)?json\b/.test(mediaType);
const isObjectLike = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

function pointerOf(ref) {
  if (typeof ref !== 'string' || !ref.startsWith('#/')) return undefined;
  return ref.slice(2).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function at(document, path) {
  let node = document;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = node[key];
  }
  return node;
}

function isObjectSchema(schema) {
  const type = schema.type;
  return type === 'object' || (Array.isArray(type) && type.includes('object')) || isObjectLike(schema.properties);
}

/** The roots: [{ schema, path }] of every body the service sends, $refs of responses resolved. */
function roots(document) {
  const out = [];
  const mediaOf = (container, path) => {
    let node = container;
    let where = path;
    const target = pointerOf(node?.$ref);
    if (target) {
      node = at(document, target);
      where = target;
    }
    if (!isObjectLike(node?.content)) return;
    for (const [media, body] of Object.entries(node.content)) {
      if (isJson(media) && body?.schema !== undefined) out.push({ schema: body.schema, path: [...where, 'content', media, 'schema'] });
    }
  };
  for (const [section, entries] of [['paths', document.paths], ['webhooks', document.webhooks]]) {
    for (const [name, item] of Object.entries(entries ?? {})) {
      for (const method of METHODS) {
        const op = item?.[method];
        if (!isObjectLike(op)) continue;
        if (section === 'paths') {
          for (const [status, response] of Object.entries(op.responses ?? {})) mediaOf(response, [section, name, method, 'responses', status]);
        } else if (op.requestBody) {
          mediaOf(op.requestBody, [section, name, method, 'requestBody']);
        }
      }
    }
  }
  for (const [name, response] of Object.entries(document.components?.responses ?? {})) mediaOf(response, ['components', 'responses', name]);
  return out;
}

/**
 * Every open object schema the service sends. Each finding: { path, keyword, message }, where
 * `path` is where the schema is written in the document and `keyword` what closes it
 * (`additionalProperties` or `unevaluatedProperties`); `keyword` is absent when no mechanical fix
 * exists (a closed allOf member whose siblings add properties).
 */
export function findOpenSchemas(document) {
  const findings = new Map();
  const seen = new Set();
  const report = (path, keyword, message) => {
    const key = path.join('\u0000');
    if (!findings.has(key)) findings.set(key, { path, keyword, message });
  };

  const walk = (schema, path, inComposition) => {
    const target = pointerOf(schema?.$ref);
    if (target) {
      const key = target.join('\u0000');
      if (seen.has(key)) return;
      seen.add(key);
      walk(at(document, target), target, false);
      return;
    }
    if (!isObjectLike(schema)) return;
    const where = path.join('.');
    const declared = schema.additionalProperties !== undefined || schema.unevaluatedProperties !== undefined;
    if (Array.isArray(schema.allOf)) {
      if (!declared) report(path, 'unevaluatedProperties', `${where}: an allOf composition the service sends must set unevaluatedProperties: false (it is open).`);
      schema.allOf.forEach((member, i) => {
        walk(member, [...path, 'allOf', i], true);
        checkClosedMember(member, schema.allOf, [...path, 'allOf', i]);
      });
    } else if (isObjectSchema(schema) && !declared && !inComposition) {
      report(path, 'additionalProperties', `${where}: an object the service sends must set additionalProperties (false to refuse undeclared properties; true only for a free-form map).`);
    }
    for (const [name, child] of Object.entries(schema.properties ?? {})) walk(child, [...path, 'properties', name], false);
    for (const [name, child] of Object.entries(schema.patternProperties ?? {})) walk(child, [...path, 'patternProperties', name], false);
    for (const keyword of ['items', 'additionalProperties', 'unevaluatedProperties', 'not', 'if', 'then', 'else', 'contains']) {
      if (isObjectLike(schema[keyword])) walk(schema[keyword], [...path, keyword], false);
    }
    for (const keyword of ['oneOf', 'anyOf', 'prefixItems']) {
      if (Array.isArray(schema[keyword])) schema[keyword].forEach((child, i) => walk(child, [...path, keyword, i], false));
    }
  };

  const checkClosedMember = (member, members, path) => {
    const target = pointerOf(member?.$ref);
    const resolved = target ? at(document, target) : member;
    if (!isObjectLike(resolved)) return;
    // A member that is (or will be) closed by additionalProperties: false refuses its siblings' properties.
    const closes = resolved.additionalProperties === false || (target && isObjectSchema(resolved) && resolved.additionalProperties === undefined && !Array.isArray(resolved.allOf));
    if (!closes) return;
    const own = new Set(Object.keys(resolved.properties ?? {}));
    const added = [];
    for (const sibling of members) {
      if (sibling === member) continue;
      const s = pointerOf(sibling?.$ref) ? at(document, pointerOf(sibling.$ref)) : sibling;
      for (const name of Object.keys(s?.properties ?? {})) if (!own.has(name)) added.push(name);
    }
    if (added.length > 0) {
      report(path, undefined, `${path.join('.')}: this allOf member is closed (additionalProperties: false) but its siblings add ${added.join(', ')}; declare them in the member or leave the closing to unevaluatedProperties: false on the composition.`);
    }
  };

  for (const { schema, path } of roots(document)) walk(schema, path, false);
  return [...findings.values()];
}

export default function closedResponses(document) {
  if (!isObjectLike(document)) return [];
  return findOpenSchemas(document).map(({ path, message }) => ({ message, path }));
}
