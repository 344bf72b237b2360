/**
 * A differ of two OpenAPI 3.1 documents, from an integrator's point of view (no npm differ reads
 * 3.1 here: ../shared/STACK.md). Each change is breaking, additive or documentation only:
 *
 * - Breaking: what a client written against the old document may no longer do or rely on. A
 *   removed operation, parameter, request property, response property, status code, media type,
 *   webhook event or error code; an operationId changed; a new required parameter or request
 *   property; a request enum or type narrowed, a limit tightened (maxLength, maximum, minItems,
 *   pattern, x-body-limit …), a request object closed; a response property no longer required or
 *   a response type widened (null where there was none); a scope newly required; security added.
 * - Additive: what old clients never notice: new operations, optional parameters and properties,
 *   new statuses and error codes, loosened limits, widened request enums and types, new response
 *   properties and enum values (clients tolerate unknown fields and values: the contract says so).
 * - Documentation: descriptions, summaries and examples only.
 *
 * Request schemas are compared for what they accept, response schemas (and webhook payloads,
 * which the service sends) for what they may contain. $refs are followed inside each document.
 */

export type ChangeKind = 'breaking' | 'additive' | 'docs';

export interface Change {
  kind: ChangeKind;
  /** A stable name of the rule (`operation-removed`, `limit-tightened`, …). */
  rule: string;
  /** Where: `POST /v1/messages request body /template/name`. */
  at: string;
  message: string;
}

type Json = Record<string, any>;
type Direction = 'request' | 'response';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Keys that document rather than constrain (`servers` names a deployment, not the contract). */
const DOC_KEYS = new Set(['description', 'summary', 'example', 'examples', 'externalDocs', 'title', 'contact', 'license', 'termsOfService', 'servers']);
/** Bounds where a smaller value accepts less. */
const UPPER = ['maxLength', 'maxItems', 'maxProperties', 'maximum', 'exclusiveMaximum'];
/** Bounds where a larger value accepts less. */
const LOWER = ['minLength', 'minItems', 'minProperties', 'minimum', 'exclusiveMinimum'];

const isObj = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

function resolver(doc: Json) {
  return (node: unknown): Json | undefined => {
    let current = node;
    for (let hops = 0; isObj(current) && typeof current.$ref === 'string' && hops < 32; hops++) {
      const ref: string = current.$ref;
      if (!ref.startsWith('#/')) return current;
      current = ref
        .slice(2)
        .split('/')
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
        .reduce<any>((n, k) => (n === undefined ? undefined : n[k]), doc);
    }
    return isObj(current) ? current : undefined;
  };
}

/** Operations keyed by `METHOD /path` with path parameter names erased (renaming `{id}` is not a removal). */
function operations(doc: Json): Map<string, { label: string; op: Json; pathItem: Json }> {
  const out = new Map<string, { label: string; op: Json; pathItem: Json }>();
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) {
      if (!isObj(item?.[method])) continue;
      out.set(`${method.toUpperCase()} ${path.replace(/\{[^}]+\}/g, '{}')}`, { label: `${method.toUpperCase()} ${path}`, op: item[method], pathItem: item });
    }
  }
  return out;
}

const typesOf = (s: Json): Set<string> | undefined =>
  s.type === undefined ? undefined : new Set<string>(Array.isArray(s.type) ? s.type : [s.type]);

/** Types in `a` that `b` does not accept (an integer is a number). */
function lostTypes(a: Set<string>, b: Set<string> | undefined): string[] {
  if (!b) return [];
  return [...a].filter((t) => !b.has(t) && !(t === 'integer' && b.has('number')));
}

const show = (v: unknown) => JSON.stringify(v);

export function diffContracts(oldDoc: Json, newDoc: Json): Change[] {
  const changes: Change[] = [];
  const add = (kind: ChangeKind, rule: string, at: string, message: string) => changes.push({ kind, rule, at, message });
  const rOld = resolver(oldDoc);
  const rNew = resolver(newDoc);

  /** allOf members merged into one view (properties, required and keywords). */
  const flatten = (s: Json | undefined, r: (n: unknown) => Json | undefined, depth = 0): Json | undefined => {
    if (!s || !Array.isArray(s.allOf) || depth > 8) return s;
    const merged: Json = { ...s, properties: { ...(s.properties ?? {}) }, required: [...(s.required ?? [])] };
    delete merged.allOf;
    for (const member of s.allOf) {
      const m = flatten(r(member), r, depth + 1);
      if (!m) continue;
      for (const [k, v] of Object.entries(m)) {
        if (k === 'properties') Object.assign(merged.properties, v);
        else if (k === 'required') merged.required.push(...(v as string[]));
        else if (!(k in merged)) merged[k] = v;
      }
    }
    return merged;
  };

  // Each pair of schemas is compared once per direction (a shared schema is reported where it is
  // first met; a schema used in requests and responses is judged both ways). Keyed by the
  // documents' own objects, so recursive schemas end.
  const visited = { request: new Map<Json, Set<Json>>(), response: new Map<Json, Set<Json>>() };

  const compareSchema = (oldRaw: unknown, newRaw: unknown, dir: Direction, at: string): void => {
    const oRaw = rOld(oldRaw);
    const nRaw = rNew(newRaw);
    if (!oRaw || !nRaw) return;
    const seen = visited[dir].get(oRaw) ?? new Set<Json>();
    if (seen.has(nRaw)) return;
    seen.add(nRaw);
    visited[dir].set(oRaw, seen);
    const o = flatten(oRaw, rOld)!;
    const n = flatten(nRaw, rNew)!;

    // Types and consts.
    const ot = typesOf(o);
    const nt = typesOf(n);
    if (dir === 'request') {
      if (!ot && nt) add('breaking', 'type-narrowed', at, `now accepts only ${[...nt].join(', ')}`);
      else if (ot && nt && lostTypes(ot, nt).length) add('breaking', 'type-narrowed', at, `no longer accepts ${lostTypes(ot, nt).join(', ')}`);
      if (ot && nt && lostTypes(nt, ot).length) add('additive', 'type-widened', at, `now also accepts ${lostTypes(nt, ot).join(', ')}`);
      else if (ot && !nt) add('additive', 'type-widened', at, 'now accepts any type');
    } else if (ot && nt && lostTypes(nt, ot).length) {
      add('breaking', 'response-type-widened', at, `may now be ${lostTypes(nt, ot).join(', ')}`);
    }
    if ('const' in n && (!('const' in o) || show(o.const) !== show(n.const))) {
      add('breaking', 'const-changed', at, `must now be ${show(n.const)}${'const' in o ? ` (was ${show(o.const)})` : ''}`);
    }

    // Enums.
    const oe = Array.isArray(o.enum) ? o.enum.map(show) : undefined;
    const ne = Array.isArray(n.enum) ? n.enum.map(show) : undefined;
    if (ne) {
      const removed = oe ? oe.filter((v) => !ne.includes(v)) : undefined;
      const added = oe ? ne.filter((v) => !oe.includes(v)) : [];
      if (dir === 'request') {
        if (!oe) add('breaking', 'enum-narrowed', at, `now accepts only ${ne.join(', ')}`);
        else if (removed!.length) add('breaking', 'enum-narrowed', at, `no longer accepts ${removed!.join(', ')}`);
        if (added.length) add('additive', 'enum-widened', at, `now also accepts ${added.join(', ')}`);
      } else {
        if (added.length) add('additive', 'response-enum-value-added', at, `may now be ${added.join(', ')} (clients tolerate unknown values)`);
        if (removed?.length) add('additive', 'response-enum-value-removed', at, `is no longer ${removed.join(', ')}`);
      }
    }

    // Limits (they bind what the service accepts: requests only).
    if (dir === 'request') {
      for (const k of UPPER) {
        if (typeof n[k] === 'number' && (typeof o[k] !== 'number' || n[k] < o[k])) add('breaking', 'limit-tightened', at, `${k} ${o[k] ?? 'none'} → ${n[k]}`);
        else if (typeof o[k] === 'number' && (typeof n[k] !== 'number' || n[k] > o[k])) add('additive', 'limit-loosened', at, `${k} ${o[k]} → ${n[k] ?? 'none'}`);
      }
      for (const k of LOWER) {
        if (typeof n[k] === 'number' && (typeof o[k] !== 'number' ? n[k] > 0 || k.startsWith('exclusive') : n[k] > o[k])) add('breaking', 'limit-tightened', at, `${k} ${o[k] ?? 'none'} → ${n[k]}`);
        else if (typeof o[k] === 'number' && (typeof n[k] !== 'number' || n[k] < o[k])) add('additive', 'limit-loosened', at, `${k} ${o[k]} → ${n[k] ?? 'none'}`);
      }
      for (const k of ['pattern', 'format']) {
        if (n[k] !== undefined && n[k] !== o[k]) add('breaking', 'limit-tightened', at, `${k} ${show(o[k] ?? null)} → ${show(n[k])}`);
        else if (o[k] !== undefined && n[k] === undefined) add('additive', 'limit-loosened', at, `${k} ${show(o[k])} removed`);
      }
      if (n.uniqueItems === true && o.uniqueItems !== true) add('breaking', 'limit-tightened', at, 'items must now be unique');
      if (n.additionalProperties === false && o.additionalProperties !== false) add('breaking', 'request-closed', at, 'undeclared properties are now refused');
      else if (n.unevaluatedProperties === false && o.unevaluatedProperties !== false && o.additionalProperties !== false) add('breaking', 'request-closed', at, 'undeclared properties are now refused');
    } else {
      const closed = (s: Json) => s.additionalProperties === false || s.unevaluatedProperties === false;
      if (closed(n) && !closed(o)) add('additive', 'response-closed', at, 'now promises no undeclared properties');
    }

    // Properties.
    const op: Json = o.properties ?? {};
    const np: Json = n.properties ?? {};
    const oreq = new Set<string>(o.required ?? []);
    const nreq = new Set<string>(n.required ?? []);
    for (const name of Object.keys(op)) {
      const where = `${at}/${name}`;
      if (!(name in np)) {
        add('breaking', dir === 'request' ? 'request-property-removed' : 'response-property-removed', where, 'removed');
        continue;
      }
      if (dir === 'request' && nreq.has(name) && !oreq.has(name)) add('breaking', 'request-property-required', where, 'is now required');
      if (dir === 'request' && oreq.has(name) && !nreq.has(name)) add('additive', 'request-property-optional', where, 'is now optional');
      if (dir === 'response' && oreq.has(name) && !nreq.has(name)) add('breaking', 'response-property-optional', where, 'may now be absent');
      compareSchema(op[name], np[name], dir, where);
    }
    for (const name of Object.keys(np)) {
      if (name in op) continue;
      const where = `${at}/${name}`;
      if (dir === 'request' && nreq.has(name)) add('breaking', 'request-property-required', where, 'new and required');
      else add('additive', dir === 'request' ? 'request-property-added' : 'response-property-added', where, 'added');
    }

    // Children.
    if (o.items !== undefined && n.items !== undefined) compareSchema(o.items, n.items, dir, `${at}/items`);
    if (isObj(o.additionalProperties) && isObj(n.additionalProperties)) compareSchema(o.additionalProperties, n.additionalProperties, dir, `${at}/*`);
    for (const k of ['oneOf', 'anyOf']) {
      const oa: unknown[] = Array.isArray(o[k]) ? o[k] : [];
      const na: unknown[] = Array.isArray(n[k]) ? n[k] : [];
      if (!oa.length && !na.length) continue;
      if (dir === 'request' && na.length < oa.length) add('breaking', 'type-narrowed', at, `${k} has ${oa.length - na.length} alternative(s) fewer`);
      if (dir === 'request' && na.length > oa.length) add('additive', 'type-widened', at, `${k} has ${na.length - oa.length} new alternative(s)`);
      if (dir === 'response' && na.length > oa.length) add('breaking', 'response-type-widened', at, `${k} has ${na.length - oa.length} new alternative(s)`);
      for (let i = 0; i < Math.min(oa.length, na.length); i++) compareSchema(oa[i], na[i], dir, `${at}(${k}[${i}])`);
    }
  };

  const parametersOf = (entry: { op: Json; pathItem: Json }, r: (n: unknown) => Json | undefined) => {
    const out = new Map<string, Json>();
    for (const p of [...(entry.pathItem.parameters ?? []), ...(entry.op.parameters ?? [])]) {
      const param = r(p);
      if (param?.name && param.in) out.set(`${param.in} ${param.in === 'header' ? String(param.name).toLowerCase() : param.name}`, param);
    }
    return out;
  };

  const mediaOf = (holder: Json | undefined) => (isObj(holder?.content) ? holder!.content : {}) as Json;

  const compareOperation = (label: string, o: { op: Json; pathItem: Json }, n: { op: Json; pathItem: Json }) => {
    if (o.op.operationId !== n.op.operationId) add('breaking', 'operation-id-changed', label, `operationId ${o.op.operationId} → ${n.op.operationId} (generated SDK methods are renamed)`);
    const oSecured = Array.isArray(o.op.security) ? o.op.security.length > 0 : Array.isArray(oldDoc.security) && oldDoc.security.length > 0;
    const nSecured = Array.isArray(n.op.security) ? n.op.security.length > 0 : Array.isArray(newDoc.security) && newDoc.security.length > 0;
    if (!oSecured && nSecured) add('breaking', 'security-added', label, 'now needs a credential');
    const oScopes: string[] = o.op['x-required-scopes'] ?? [];
    const nScopes: string[] = n.op['x-required-scopes'] ?? [];
    const moreScopes = nScopes.filter((s) => !oScopes.includes(s));
    const fewerScopes = oScopes.filter((s) => !nScopes.includes(s));
    if (moreScopes.length) add('breaking', 'scope-required', label, `now requires scope ${moreScopes.join(', ')}`);
    if (fewerScopes.length) add('additive', 'scope-dropped', label, `no longer requires scope ${fewerScopes.join(', ')}`);
    const oLimit = o.op['x-body-limit'];
    const nLimit = n.op['x-body-limit'];
    if (typeof nLimit === 'number' && (typeof oLimit !== 'number' || nLimit < oLimit)) add('breaking', 'limit-tightened', label, `x-body-limit ${oLimit ?? 'default'} → ${nLimit}`);
    else if (typeof oLimit === 'number' && typeof nLimit === 'number' && nLimit > oLimit) add('additive', 'limit-loosened', label, `x-body-limit ${oLimit} → ${nLimit}`);

    // Parameters.
    const op = parametersOf(o, rOld);
    const np = parametersOf(n, rNew);
    for (const [key, p] of op) {
      const where = `${label} parameter ${key}`;
      const q = np.get(key);
      if (!q) {
        if (p.in !== 'path') add('breaking', 'parameter-removed', where, 'removed (clients that send it are refused)');
        continue;
      }
      if (q.required === true && p.required !== true) add('breaking', 'parameter-required', where, 'is now required');
      compareSchema(p.schema, q.schema, 'request', where);
    }
    for (const [key, q] of np) {
      if (op.has(key)) continue;
      if (q.in === 'path') continue;
      if (q.required === true) add('breaking', 'parameter-required', `${label} parameter ${key}`, 'new and required');
      else add('additive', 'parameter-added', `${label} parameter ${key}`, 'new, optional');
    }

    // Request body.
    const ob = rOld(o.op.requestBody);
    const nb = rNew(n.op.requestBody);
    if (nb && !ob && nb.required === true) add('breaking', 'request-body-required', `${label} request body`, 'a body is now required');
    if (nb && ob && nb.required === true && ob.required !== true) add('breaking', 'request-body-required', `${label} request body`, 'the body is now required');
    if (ob && nb) {
      const om = mediaOf(ob);
      const nm = mediaOf(nb);
      for (const media of Object.keys(om)) {
        if (!(media in nm)) add('breaking', 'media-type-removed', `${label} request body`, `${media} no longer accepted`);
        else compareSchema(om[media].schema, nm[media].schema, 'request', `${label} request body`);
      }
      for (const media of Object.keys(nm)) if (!(media in om)) add('additive', 'media-type-added', `${label} request body`, `${media} now accepted`);
    }

    // Responses.
    const or: Json = o.op.responses ?? {};
    const nr: Json = n.op.responses ?? {};
    for (const status of Object.keys(or)) {
      if (!(status in nr)) {
        add('breaking', 'status-removed', label, `response ${status} removed (clients handling it no longer get it; a changed status is a removal and an addition)`);
        continue;
      }
      const a = rOld(or[status]);
      const b = rNew(nr[status]);
      const am = mediaOf(a);
      const bm = mediaOf(b);
      for (const media of Object.keys(am)) {
        if (!(media in bm)) add('breaking', 'media-type-removed', `${label} response ${status}`, `${media} no longer sent`);
        else compareSchema(am[media].schema, bm[media].schema, 'response', `${label} response ${status}`);
      }
      for (const header of Object.keys(a?.headers ?? {})) {
        if (!(header in (b?.headers ?? {}))) add('breaking', 'response-header-removed', `${label} response ${status}`, `header ${header} removed`);
      }
    }
    for (const status of Object.keys(nr)) if (!(status in or)) add('additive', 'status-added', label, `response ${status} added`);
  };

  // Operations.
  const oOps = operations(oldDoc);
  const nOps = operations(newDoc);
  for (const [key, o] of oOps) {
    const n = nOps.get(key);
    if (!n) add('breaking', 'operation-removed', o.label, `operation ${o.op.operationId ?? ''} removed`.trim());
    else compareOperation(n.label, o, n);
  }
  for (const [key, n] of nOps) if (!oOps.has(key)) add('additive', 'operation-added', n.label, `operation ${n.op.operationId ?? ''} added`.trim());

  // Webhook events (payloads the service sends: compared as responses).
  const oHooks: Json = oldDoc.webhooks ?? {};
  const nHooks: Json = newDoc.webhooks ?? {};
  for (const name of Object.keys(oHooks)) {
    if (!(name in nHooks)) {
      add('breaking', 'webhook-removed', `webhook ${name}`, 'no longer sent');
      continue;
    }
    const a = mediaOf(rOld(oHooks[name]?.post?.requestBody));
    const b = mediaOf(rNew(nHooks[name]?.post?.requestBody));
    for (const media of Object.keys(a)) if (media in b) compareSchema(a[media].schema, b[media].schema, 'response', `webhook ${name} payload`);
  }
  for (const name of Object.keys(nHooks)) if (!(name in oHooks)) add('additive', 'webhook-added', `webhook ${name}`, 'new event');

  // Error codes: clients branch on them, so a removed code is breaking even where it is only sent.
  const oCodes: unknown[] = oldDoc.components?.schemas?.ErrorCode?.enum ?? [];
  const nCodes: unknown[] = newDoc.components?.schemas?.ErrorCode?.enum ?? [];
  for (const code of oCodes) if (!nCodes.includes(code)) add('breaking', 'error-code-removed', 'components.schemas.ErrorCode', `error code ${String(code)} removed`);
  for (const code of nCodes) if (!oCodes.includes(code)) add('additive', 'error-code-added', 'components.schemas.ErrorCode', `error code ${String(code)} added`);
  // An error code seen from a response schema is reported once, by the rule above.
  const unique = dedupe(changes.filter((c) => !(c.rule.startsWith('response-enum-value') && /\/error\/code$/.test(c.at))));

  // Anything else that differs: documentation, or a change this differ does not classify.
  if (show(stripDocs(oldDoc)) !== show(stripDocs(newDoc))) {
    if (unique.length === 0) add('additive', 'unclassified', '(document)', 'the contract changed in a way this differ does not classify: review it by hand');
  } else if (show(withoutVersion(oldDoc)) !== show(withoutVersion(newDoc))) {
    add('docs', 'documentation', '(document)', 'descriptions, summaries or examples changed');
  }
  return dedupe([...unique, ...changes.filter((c) => c.rule === 'unclassified' || c.rule === 'documentation')]);
}

function dedupe(changes: Change[]): Change[] {
  const seen = new Set<string>();
  return changes.filter((c) => {
    const key = `${c.kind}|${c.rule}|${c.at}|${c.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function withoutVersion(doc: Json): Json {
  return { ...doc, info: { ...(doc.info ?? {}), version: undefined } };
}

function stripDocs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(stripDocs);
  if (!isObj(node)) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    if (DOC_KEYS.has(k) || k === 'version') continue;
    // Under `properties` the keys are names (a property may be called `description`).
    out[k] = k === 'properties' && isObj(v) ? Object.fromEntries(Object.entries(v).map(([name, s]) => [name, stripDocs(s)])) : stripDocs(v);
  }
  return out;
}

/** The least version step the changes need: major (breaking), minor (additive), patch (docs), or none. */
export function requiredBump(changes: Change[]): 'major' | 'minor' | 'patch' | 'none' {
  if (changes.some((c) => c.kind === 'breaking')) return 'major';
  if (changes.some((c) => c.kind === 'additive')) return 'minor';
  if (changes.some((c) => c.kind === 'docs')) return 'patch';
  return 'none';
}

/** Changes with the same rule and message at more than `max` places, folded into one line each. */
export function groupChanges(changes: Change[], max = 3): Array<Change & { places: string[] }> {
  const groups = new Map<string, Change & { places: string[] }>();
  for (const c of changes) {
    const key = `${c.kind}|${c.rule}|${c.message}`;
    const g = groups.get(key);
    if (g) g.places.push(c.at);
    else groups.set(key, { ...c, places: [c.at] });
  }
  const out: Array<Change & { places: string[] }> = [];
  for (const g of groups.values()) {
    if (g.places.length > max) out.push(g);
    else for (const at of g.places) out.push({ ...g, at, places: [at] });
  }
  return out;
}
