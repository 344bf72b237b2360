// Spectral rule: a description that states a limit agrees with the schema's keyword for it.
// "at most 1,000 characters" beside `maxLength: 300` is a contract that says two things; the
// schema is what the service enforces (limits are read from the contract), so the prose must follow.
// Checked phrases: "at most / up to / no more than N characters|items|keys|entries|predicates",
// "at least N characters|items", "N to M characters". A description is compared with its own
// schema (or a parameter's schema); when that has no such keyword, with the one oneOf/anyOf
// branch that has it. Phrases about other things (a description naming no keyword) are skipped.
const UNIT = { characters: ['minLength', 'maxLength'], items: ['minItems', 'maxItems'], entries: ['minItems', 'maxItems'], predicates: ['minItems', 'maxItems'], keys: ['minProperties', 'maxProperties'], properties: ['minProperties', 'maxProperties'] };
const UNITS = Object.keys(UNIT).join('|');
const num = (s) => Number(s.replace(/,/g, ''));

function resolve(document, node) {
  for (let i = 0; i < 16 && node && typeof node.$ref === 'string' && node.$ref.startsWith('#/'); i++) {
    node = node.$ref.slice(2).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')).reduce((n, k) => (n == null ? undefined : n[k]), document);
  }
  return node;
}

/** What the description claims: [{ keyword, value, phrase }]. */
export function claimsOf(description) {
  const claims = [];
  for (const m of description.matchAll(new RegExp(`\\b(\\d[\\d,]*) to (\\d[\\d,]*) (${UNITS})\\b`, 'g'))) {
    claims.push({ keyword: UNIT[m[3]][0], value: num(m[1]), phrase: m[0] }, { keyword: UNIT[m[3]][1], value: num(m[2]), phrase: m[0] });
  }
  for (const m of description.matchAll(new RegExp(`\\b(at most|up to|no more than|at least) (\\d[\\d,]*) (${UNITS})\\b`, 'g'))) {
    claims.push({ keyword: UNIT[m[3]][m[1] === 'at least' ? 0 : 1], value: num(m[2]), phrase: m[0] });
  }
  return claims;
}

function targetFor(document, schema, keyword) {
  const s = resolve(document, schema);
  if (!s || typeof s !== 'object') return undefined;
  if (typeof s[keyword] === 'number') return s;
  const branches = [...(s.oneOf ?? []), ...(s.anyOf ?? [])].map((b) => resolve(document, b)).filter((b) => b && typeof b[keyword] === 'number');
  return branches.length === 1 ? branches[0] : undefined;
}

/** Every value of `keyword` in the schemas reachable from `node` ($refs followed). */
function valuesOf(document, node, keyword, acc = new Set(), seen = new Set()) {
  node = resolve(document, node);
  if (!node || typeof node !== 'object' || seen.has(node)) return acc;
  seen.add(node);
  if (typeof node[keyword] === 'number') acc.add(node[keyword]);
  for (const [k, v] of Object.entries(node)) if (k !== 'examples' && k !== 'example' && k !== 'description') valuesOf(document, v, keyword, acc, seen);
  return acc;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/**
 * An operation's description speaks of its request: each limit it states must be the value of
 * that keyword in some schema of the operation's parameters or body. Skipped when none of them has
 * the keyword at all, and in a paragraph (or bullet) that names an error code of its own other
 * than `invalid_request`: such a limit is enforced in code with that code, outside the schema.
 */
function checkedParagraphs(description) {
  return description
    .split(/\n\s*\n|\n(?=\s*[*-] )/)
    .filter((p) => ![...p.matchAll(/`([a-z]+(?:_[a-z]+)+)`/g)].some((m) => m[1] !== 'invalid_request'))
    .join('\n\n');
}

function operationMismatches(document) {
  const out = [];
  for (const [route, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      const op = item?.[method];
      if (typeof op?.description !== 'string') continue;
      const inputs = [item.parameters ?? [], op.parameters ?? [], op.requestBody ?? {}];
      for (const claim of claimsOf(checkedParagraphs(op.description))) {
        const values = valuesOf(document, inputs, claim.keyword);
        if (values.size > 0 && !values.has(claim.value)) {
          out.push({
            path: ['paths', route, method, 'description'],
            message: `${method.toUpperCase()} ${route}: the description says "${claim.phrase}" but no schema of its request has ${claim.keyword} ${claim.value} (it has ${[...values].join(', ')}); write the number from the schema.`,
          });
        }
      }
    }
  }
  return out;
}

export function findDescribedLimitMismatches(document) {
  const out = operationMismatches(document);
  const seen = new Set();
  const visit = (node, path) => {
    if (!node || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) return node.forEach((v, i) => visit(v, [...path, i]));
    if (typeof node.description === 'string') {
      const schema = node.in && node.schema ? node.schema : node;
      for (const claim of claimsOf(node.description)) {
        const target = targetFor(document, schema, claim.keyword);
        if (target && target[claim.keyword] !== claim.value) {
          out.push({
            path: [...path, 'description'],
            message: `${path.join('.')}: the description says "${claim.phrase}" but the schema's ${claim.keyword} is ${target[claim.keyword]}; write the number from the schema.`,
          });
        }
      }
    }
    for (const [k, v] of Object.entries(node)) if (k !== 'examples' && k !== 'example') visit(v, [...path, k]);
  };
  visit(document, []);
  return out;
}

export default function describedLimits(document) {
  return document && typeof document === 'object' ? findDescribedLimitMismatches(document) : [];
}
