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
  return new ContractDiff(oldDoc, newDoc).run();
}

/** allOf members merged into one view (properties, required and keywords). */
function flatten(s: Json | undefined, r: (n: unknown) => Json | undefined, depth = 0): Json | undefined {
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
}

const mediaOf = (holder: Json | undefined) => (isObj(holder?.content) ? holder!.content : {}) as Json;

type Entry = { op: Json; pathItem: Json };

/** One comparison of two documents: each part of the contract by a method of its own. */
class ContractDiff {
  private readonly changes: Change[] = [];
  private readonly rOld: (n: unknown) => Json | undefined;
  private readonly rNew: (n: unknown) => Json | undefined;
  // Each pair of schemas is compared once per direction (a shared schema is reported where it is
  // first met; a schema used in requests and responses is judged both ways). Keyed by the
  // documents' own objects, so recursive schemas end.
  private readonly visited = { request: new Map<Json, Set<Json>>(), response: new Map<Json, Set<Json>>() };

  constructor(private readonly oldDoc: Json, private readonly newDoc: Json) {
    this.rOld = resolver(oldDoc);
    this.rNew = resolver(newDoc);
  }

  private add(kind: ChangeKind, rule: string, at: string, message: string): void {
    this.changes.push({ kind, rule, at, message });
  }

  run(): Change[] {
    this.compareOperations();
    this.compareWebhooks();
    this.compareErrorCodes();
    // An error code seen from a response schema is reported once, by the error-code rule.
    const unique = dedupe(this.changes.filter((c) => !(c.rule.startsWith('response-enum-value') && /\/error\/code$/.test(c.at))));
    // Anything else that differs: documentation, or a change this differ does not classify.
    if (show(stripDocs(this.oldDoc)) !== show(stripDocs(this.newDoc))) {
      if (unique.length === 0) this.add('additive', 'unclassified', '(document)', 'the contract changed in a way this differ does not classify: review it by hand');
    } else if (show(withoutVersion(this.oldDoc)) !== show(withoutVersion(this.newDoc))) {
      this.add('docs', 'documentation', '(document)', 'descriptions, summaries or examples changed');
    }
    return dedupe([...unique, ...this.changes.filter((c) => c.rule === 'unclassified' || c.rule === 'documentation')]);
  }

  private compareSchema(oldRaw: unknown, newRaw: unknown, dir: Direction, at: string): void {
    const oRaw = this.rOld(oldRaw);
    const nRaw = this.rNew(newRaw);
    if (!oRaw || !nRaw) return;
    const seen = this.visited[dir].get(oRaw) ?? new Set<Json>();
    if (seen.has(nRaw)) return;
    seen.add(nRaw);
    this.visited[dir].set(oRaw, seen);
    const o = flatten(oRaw, this.rOld)!;
    const n = flatten(nRaw, this.rNew)!;
    this.compareTypes(o, n, dir, at);
    this.compareEnums(o, n, dir, at);
    if (dir === 'request') this.compareLimits(o, n, at);
    else if (isClosed(n) && !isClosed(o)) this.add('additive', 'response-closed', at, 'now promises no undeclared properties');
    this.compareProperties(o, n, dir, at);
    this.compareChildren(o, n, dir, at);
  }

  /** Types and consts. */
  private compareTypes(o: Json, n: Json, dir: Direction, at: string): void {
    const ot = typesOf(o);
    const nt = typesOf(n);
    if (dir === 'request') {
      if (!ot && nt) this.add('breaking', 'type-narrowed', at, `now accepts only ${[...nt].join(', ')}`);
      else if (ot && nt && lostTypes(ot, nt).length) this.add('breaking', 'type-narrowed', at, `no longer accepts ${lostTypes(ot, nt).join(', ')}`);
      if (ot && nt && lostTypes(nt, ot).length) this.add('additive', 'type-widened', at, `now also accepts ${lostTypes(nt, ot).join(', ')}`);
      else if (ot && !nt) this.add('additive', 'type-widened', at, 'now accepts any type');
    } else if (ot && nt && lostTypes(nt, ot).length) {
      this.add('breaking', 'response-type-widened', at, `may now be ${lostTypes(nt, ot).join(', ')}`);
    }
    if ('const' in n && (!('const' in o) || show(o.const) !== show(n.const))) {
      this.add('breaking', 'const-changed', at, `must now be ${show(n.const)}${'const' in o ? ` (was ${show(o.const)})` : ''}`);
    }
  }

  private compareEnums(o: Json, n: Json, dir: Direction, at: string): void {
    const oe = Array.isArray(o.enum) ? o.enum.map(show) : undefined;
    const ne = Array.isArray(n.enum) ? n.enum.map(show) : undefined;
    if (!ne) return;
    const removed = oe ? oe.filter((v) => !ne.includes(v)) : undefined;
    const added = oe ? ne.filter((v) => !oe.includes(v)) : [];
    if (dir === 'request') {
      if (!oe) this.add('breaking', 'enum-narrowed', at, `now accepts only ${ne.join(', ')}`);
      else if (removed!.length) this.add('breaking', 'enum-narrowed', at, `no longer accepts ${removed!.join(', ')}`);
      if (added.length) this.add('additive', 'enum-widened', at, `now also accepts ${added.join(', ')}`);
    } else {
      if (added.length) this.add('additive', 'response-enum-value-added', at, `may now be ${added.join(', ')} (clients tolerate unknown values)`);
      if (removed?.length) this.add('additive', 'response-enum-value-removed', at, `is no longer ${removed.join(', ')}`);
    }
  }

  /** Limits bind what the service accepts: requests only. */
  private compareLimits(o: Json, n: Json, at: string): void {
    for (const k of UPPER) {
      if (typeof n[k] === 'number' && (typeof o[k] !== 'number' || n[k] < o[k])) this.add('breaking', 'limit-tightened', at, `${k} ${o[k] ?? 'none'} → ${n[k]}`);
      else if (typeof o[k] === 'number' && (typeof n[k] !== 'number' || n[k] > o[k])) this.add('additive', 'limit-loosened', at, `${k} ${o[k]} → ${n[k] ?? 'none'}`);
    }
    for (const k of LOWER) {
      if (typeof n[k] === 'number' && (typeof o[k] !== 'number' ? n[k] > 0 || k.startsWith('exclusive') : n[k] > o[k])) this.add('breaking', 'limit-tightened', at, `${k} ${o[k] ?? 'none'} → ${n[k]}`);
      else if (typeof o[k] === 'number' && (typeof n[k] !== 'number' || n[k] < o[k])) this.add('additive', 'limit-loosened', at, `${k} ${o[k]} → ${n[k] ?? 'none'}`);
    }
    for (const k of ['pattern', 'format']) {
      if (n[k] !== undefined && n[k] !== o[k]) this.add('breaking', 'limit-tightened', at, `${k} ${show(o[k] ?? null)} → ${show(n[k])}`);
      else if (o[k] !== undefined && n[k] === undefined) this.add('additive', 'limit-loosened', at, `${k} ${show(o[k])} removed`);
    }
    if (n.uniqueItems === true && o.uniqueItems !== true) this.add('breaking', 'limit-tightened', at, 'items must now be unique');
    if (n.additionalProperties === false && o.additionalProperties !== false) this.add('breaking', 'request-closed', at, 'undeclared properties are now refused');
    else if (n.unevaluatedProperties === false && o.unevaluatedProperties !== false && o.additionalProperties !== false) this.add('breaking', 'request-closed', at, 'undeclared properties are now refused');
  }

  private compareProperties(o: Json, n: Json, dir: Direction, at: string): void {
    const op: Json = o.properties ?? {};
    const np: Json = n.properties ?? {};
    const oreq = new Set<string>(o.required ?? []);
    const nreq = new Set<string>(n.required ?? []);
    for (const name of Object.keys(op)) {
      const where = `${at}/${name}`;
      if (!(name in np)) {
        this.add('breaking', dir === 'request' ? 'request-property-removed' : 'response-property-removed', where, 'removed');
        continue;
      }
      if (dir === 'request' && nreq.has(name) && !oreq.has(name)) this.add('breaking', 'request-property-required', where, 'is now required');
      if (dir === 'request' && oreq.has(name) && !nreq.has(name)) this.add('additive', 'request-property-optional', where, 'is now optional');
      if (dir === 'response' && oreq.has(name) && !nreq.has(name)) this.add('breaking', 'response-property-optional', where, 'may now be absent');
      this.compareSchema(op[name], np[name], dir, where);
    }
    for (const name of Object.keys(np)) {
      if (name in op) continue;
      const where = `${at}/${name}`;
      if (dir === 'request' && nreq.has(name)) this.add('breaking', 'request-property-required', where, 'new and required');
      else this.add('additive', dir === 'request' ? 'request-property-added' : 'response-property-added', where, 'added');
    }
  }

  /** Items, additional properties and alternatives. */
  private compareChildren(o: Json, n: Json, dir: Direction, at: string): void {
    if (o.items !== undefined && n.items !== undefined) this.compareSchema(o.items, n.items, dir, `${at}/items`);
    if (isObj(o.additionalProperties) && isObj(n.additionalProperties)) this.compareSchema(o.additionalProperties, n.additionalProperties, dir, `${at}/*`);
    for (const k of ['oneOf', 'anyOf']) {
      const oa: unknown[] = Array.isArray(o[k]) ? o[k] : [];
      const na: unknown[] = Array.isArray(n[k]) ? n[k] : [];
      if (!oa.length && !na.length) continue;
      if (dir === 'request' && na.length < oa.length) this.add('breaking', 'type-narrowed', at, `${k} has ${oa.length - na.length} alternative(s) fewer`);
      if (dir === 'request' && na.length > oa.length) this.add('additive', 'type-widened', at, `${k} has ${na.length - oa.length} new alternative(s)`);
      if (dir === 'response' && na.length > oa.length) this.add('breaking', 'response-type-widened', at, `${k} has ${na.length - oa.length} new alternative(s)`);
      for (let i = 0; i < Math.min(oa.length, na.length); i++) this.compareSchema(oa[i], na[i], dir, `${at}(${k}[${i}])`);
    }
  }

  private compareOperations(): void {
    const oOps = operations(this.oldDoc);
    const nOps = operations(this.newDoc);
    for (const [key, o] of oOps) {
      const n = nOps.get(key);
      if (!n) this.add('breaking', 'operation-removed', o.label, `operation ${o.op.operationId ?? ''} removed`.trim());
      else this.compareOperation(n.label, o, n);
    }
    for (const [key, n] of nOps) if (!oOps.has(key)) this.add('additive', 'operation-added', n.label, `operation ${n.op.operationId ?? ''} added`.trim());
  }

  private compareOperation(label: string, o: Entry, n: Entry): void {
    if (o.op.operationId !== n.op.operationId) this.add('breaking', 'operation-id-changed', label, `operationId ${o.op.operationId} → ${n.op.operationId} (generated SDK methods are renamed)`);
    this.compareAccess(label, o, n);
    this.compareParameters(label, o, n);
    this.compareRequestBody(label, o, n);
    this.compareResponses(label, o, n);
  }

  /** Security, scopes and the body limit. */
  private compareAccess(label: string, o: Entry, n: Entry): void {
    const oSecured = Array.isArray(o.op.security) ? o.op.security.length > 0 : Array.isArray(this.oldDoc.security) && this.oldDoc.security.length > 0;
    const nSecured = Array.isArray(n.op.security) ? n.op.security.length > 0 : Array.isArray(this.newDoc.security) && this.newDoc.security.length > 0;
    if (!oSecured && nSecured) this.add('breaking', 'security-added', label, 'now needs a credential');
    const oScopes: string[] = o.op['x-required-scopes'] ?? [];
    const nScopes: string[] = n.op['x-required-scopes'] ?? [];
    const moreScopes = nScopes.filter((s) => !oScopes.includes(s));
    const fewerScopes = oScopes.filter((s) => !nScopes.includes(s));
    if (moreScopes.length) this.add('breaking', 'scope-required', label, `now requires scope ${moreScopes.join(', ')}`);
    if (fewerScopes.length) this.add('additive', 'scope-dropped', label, `no longer requires scope ${fewerScopes.join(', ')}`);
    const oLimit = o.op['x-body-limit'];
    const nLimit = n.op['x-body-limit'];
    if (typeof nLimit === 'number' && (typeof oLimit !== 'number' || nLimit < oLimit)) this.add('breaking', 'limit-tightened', label, `x-body-limit ${oLimit ?? 'default'} → ${nLimit}`);
    else if (typeof oLimit === 'number' && typeof nLimit === 'number' && nLimit > oLimit) this.add('additive', 'limit-loosened', label, `x-body-limit ${oLimit} → ${nLimit}`);
  }

  private compareParameters(label: string, o: Entry, n: Entry): void {
    const op = parametersOf(o, this.rOld);
    const np = parametersOf(n, this.rNew);
    for (const [key, p] of op) {
      const where = `${label} parameter ${key}`;
      const q = np.get(key);
      if (!q) {
        if (p.in !== 'path') this.add('breaking', 'parameter-removed', where, 'removed (clients that send it are refused)');
        continue;
      }
      if (q.required === true && p.required !== true) this.add('breaking', 'parameter-required', where, 'is now required');
      this.compareSchema(p.schema, q.schema, 'request', where);
    }
    for (const [key, q] of np) {
      if (op.has(key) || q.in === 'path') continue;
      if (q.required === true) this.add('breaking', 'parameter-required', `${label} parameter ${key}`, 'new and required');
      else this.add('additive', 'parameter-added', `${label} parameter ${key}`, 'new, optional');
    }
  }

  private compareRequestBody(label: string, o: Entry, n: Entry): void {
    const ob = this.rOld(o.op.requestBody);
    const nb = this.rNew(n.op.requestBody);
    if (nb && !ob && nb.required === true) this.add('breaking', 'request-body-required', `${label} request body`, 'a body is now required');
    if (nb && ob && nb.required === true && ob.required !== true) this.add('breaking', 'request-body-required', `${label} request body`, 'the body is now required');
    if (!ob || !nb) return;
    const om = mediaOf(ob);
    const nm = mediaOf(nb);
    for (const media of Object.keys(om)) {
      if (!(media in nm)) this.add('breaking', 'media-type-removed', `${label} request body`, `${media} no longer accepted`);
      else this.compareSchema(om[media].schema, nm[media].schema, 'request', `${label} request body`);
    }
    for (const media of Object.keys(nm)) if (!(media in om)) this.add('additive', 'media-type-added', `${label} request body`, `${media} now accepted`);
  }

  private compareResponses(label: string, o: Entry, n: Entry): void {
    const or: Json = o.op.responses ?? {};
    const nr: Json = n.op.responses ?? {};
    for (const status of Object.keys(or)) {
      if (!(status in nr)) {
        this.add('breaking', 'status-removed', label, `response ${status} removed (clients handling it no longer get it; a changed status is a removal and an addition)`);
        continue;
      }
      const a = this.rOld(or[status]);
      const b = this.rNew(nr[status]);
      const am = mediaOf(a);
      const bm = mediaOf(b);
      for (const media of Object.keys(am)) {
        if (!(media in bm)) this.add('breaking', 'media-type-removed', `${label} response ${status}`, `${media} no longer sent`);
        else this.compareSchema(am[media].schema, bm[media].schema, 'response', `${label} response ${status}`);
      }
      for (const header of Object.keys(a?.headers ?? {})) {
        if (!(header in (b?.headers ?? {}))) this.add('breaking', 'response-header-removed', `${label} response ${status}`, `header ${header} removed`);
      }
    }
    for (const status of Object.keys(nr)) if (!(status in or)) this.add('additive', 'status-added', label, `response ${status} added`);
  }

  /** Webhook events: payloads the service sends, compared as responses. */
  private compareWebhooks(): void {
    const oHooks: Json = this.oldDoc.webhooks ?? {};
    const nHooks: Json = this.newDoc.webhooks ?? {};
    for (const name of Object.keys(oHooks)) {
      if (!(name in nHooks)) {
        this.add('breaking', 'webhook-removed', `webhook ${name}`, 'no longer sent');
        continue;
      }
      const a = mediaOf(this.rOld(oHooks[name]?.post?.requestBody));
      const b = mediaOf(this.rNew(nHooks[name]?.post?.requestBody));
      for (const media of Object.keys(a)) if (media in b) this.compareSchema(a[media].schema, b[media].schema, 'response', `webhook ${name} payload`);
    }
    for (const name of Object.keys(nHooks)) if (!(name in oHooks)) this.add('additive', 'webhook-added', `webhook ${name}`, 'new event');
  }

  /** Error codes: clients branch on them, so a removed code is breaking even where it is only sent. */
  private compareErrorCodes(): void {
    const oCodes: unknown[] = this.oldDoc.components?.schemas?.ErrorCode?.enum ?? [];
    const nCodes: unknown[] = this.newDoc.components?.schemas?.ErrorCode?.enum ?? [];
    for (const code of oCodes) if (!nCodes.includes(code)) this.add('breaking', 'error-code-removed', 'components.schemas.ErrorCode', `error code ${String(code)} removed`);
    for (const code of nCodes) if (!oCodes.includes(code)) this.add('additive', 'error-code-added', 'components.schemas.ErrorCode', `error code ${String(code)} added`);
  }
}

const isClosed = (s: Json) => s.additionalProperties === false || s.unevaluatedProperties === false;

function parametersOf(entry: Entry, r: (n: unknown) => Json | undefined): Map<string, Json> {
  const out = new Map<string, Json>();
  for (const p of [...(entry.pathItem.parameters ?? []), ...(entry.op.parameters ?? [])]) {
    const param = r(p);
    if (param?.name && param.in) out.set(`${param.in} ${param.in === 'header' ? String(param.name).toLowerCase() : param.name}`, param);
  }
  return out;
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
