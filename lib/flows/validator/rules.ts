/**
 * The rules over a parsed flow. One walk collects each screen's components, inputs, actions and
 * references; the screen checks then read that summary, and graph.ts checks routing and
 * references over all screens. Every finding names its rule (findings.ts).
 */
import {
  ACTIONS,
  ACTIVE_VERSIONS,
  COMPONENTS,
  DATA_TYPES,
  FROZEN_VERSIONS,
  MAX_COMPONENTS_PER_SCREEN,
  RESERVED_SCREEN_IDS,
  SCREEN_ID,
  SCREEN_PROPS,
  TOP_PROPS,
  dashed,
  versionNumber,
} from './catalog.js';
import type { ErrorType, RawFinding, Rule, Severity } from './findings.js';
import { escapePointer } from './positions.js';
import { checkReferences, checkRouting } from './graph.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

import type { ActionUse, CheckContext, ScreenInfo } from './context.js';

/** A reference inside `${…}`: data.x, form.x, or screen.ID.data.x / screen.ID.form.x. */
const REF = /(?<![\w.])(?:screen\.([A-Za-z_]+)\.)?(data|form)\.([A-Za-z_][A-Za-z0-9_]*)/g;
const BINDING = /\$\{([^}]*)\}/g;

export class Checker implements CheckContext {
  readonly out: RawFinding[] = [];
  version = NaN;
  versionText = '';
  screens: ScreenInfo[] = [];
  screenObjects: Obj[] = [];
  byId = new Map<string, ScreenInfo>();
  refs: { screen: ScreenInfo; pointer: string; scope: string | undefined; kind: string; name: string }[] = [];

  add(rule: Rule, error: string, pointer: string, message: string, severity: Severity = 'error', type: ErrorType = 'FLOW_JSON_ERROR'): void {
    this.out.push({ rule, error, error_type: type, message, severity, pointer });
  }

  schema(rule: Rule, error: string, pointer: string, message: string): void {
    this.add(rule, error, pointer, message, 'error', 'JSON_SCHEMA_ERROR');
  }

  run(flow: unknown): RawFinding[] {
    if (!isObj(flow)) {
      this.schema('structure', 'INVALID_PROPERTY_TYPE', '', 'The Flow JSON must be an object with "version" and "screens".');
      return this.out;
    }
    for (const k of Object.keys(flow)) {
      if (!(TOP_PROPS as readonly string[]).includes(k)) this.schema('structure', 'INVALID_PROPERTY', `/${escapePointer(k)}`, `The property "${k}" cannot be specified at "$root".${hint(k, TOP_PROPS)}`);
    }
    this.checkVersion(flow);
    const screens = flow.screens;
    if (screens === undefined) {
      this.schema('structure', 'REQUIRED_PROPERTY_MISSING', '', 'The required property "screens" is missing.');
      return this.out;
    }
    if (!Array.isArray(screens) || screens.length === 0) {
      this.schema('structure', 'INVALID_PROPERTY_TYPE', '/screens', '"screens" must be a non-empty array of screens.');
      return this.out;
    }
    this.screenObjects = screens.map((s) => (isObj(s) ? s : {}));
    screens.forEach((s, i) => this.collectScreen(s, i));
    if (Number.isFinite(this.version) && this.version >= 600) this.emptyStrings(flow, []);
    this.checkScreens();
    checkRouting(this, flow);
    checkReferences(this);
    return this.out;
  }

  // --- version and data API -------------------------------------------------------------------

  checkVersion(flow: Obj): void {
    const v = flow.version;
    if (v === undefined) {
      this.schema('version', 'REQUIRED_PROPERTY_MISSING', '', `The required property "version" is missing (use "${ACTIVE_VERSIONS[ACTIVE_VERSIONS.length - 1]}").`);
      return;
    }
    if (typeof v !== 'string') {
      this.schema('version', 'INVALID_PROPERTY_TYPE', '/version', `"version" must be a string such as "7.3", not ${JSON.stringify(v)}.`);
      return;
    }
    this.versionText = v;
    if ((FROZEN_VERSIONS as readonly string[]).includes(v)) {
      this.add('version', 'FROZEN_VERSION', '/version', `Flow JSON version ${v} is frozen: flows in it can no longer be published. Use one of ${ACTIVE_VERSIONS.join(', ')}.`);
    } else if (!(ACTIVE_VERSIONS as readonly string[]).includes(v)) {
      this.add('version', 'UNSUPPORTED_VERSION', '/version', `Flow JSON version "${v}" is not supported. Use one of ${ACTIVE_VERSIONS.join(', ')}.`);
    } else this.version = versionNumber(v);
  }

  atLeast(since: string): boolean {
    return !Number.isFinite(this.version) || this.version >= versionNumber(since);
  }

  // --- collecting -----------------------------------------------------------------------------

  collectScreen(s: unknown, index: number): void {
    const pointer = `/screens/${index}`;
    if (!isObj(s)) {
      this.schema('structure', 'INVALID_PROPERTY_TYPE', pointer, 'A screen must be an object with "id" and "layout".');
      return;
    }
    for (const k of Object.keys(s)) {
      if (!(SCREEN_PROPS as readonly string[]).includes(k)) this.schema('structure', 'INVALID_PROPERTY', `${pointer}/${escapePointer(k)}`, `The property "${k}" cannot be specified at "$root/screens/${index}".${hint(k, SCREEN_PROPS)}`);
    }
    const id = typeof s.id === 'string' ? s.id : '';
    if (typeof s.id !== 'string') this.schema('structure', 'REQUIRED_PROPERTY_MISSING', pointer, `Screen ${index} needs an "id" (letters and underscores).`);
    else if (!SCREEN_ID.test(id)) this.add('screen_id', 'INVALID_SCREEN_ID', `${pointer}/id`, `Screen id "${id}" may contain only letters and underscores (e.g. "${toLetters(id)}").`);
    else if (RESERVED_SCREEN_IDS.includes(id)) this.add('screen_id', 'RESERVED_SCREEN_ID', `${pointer}/id`, `Screen id "${id}" is reserved by WhatsApp; choose another.`);
    else if (this.byId.has(id)) this.add('screen_id', 'DUPLICATE_SCREEN_ID', `${pointer}/id`, `Screen id "${id}" is used by screen ${this.byId.get(id)!.index} already.`);
    if (s.terminal !== undefined && typeof s.terminal !== 'boolean') this.schema('structure', 'INVALID_PROPERTY_TYPE', `${pointer}/terminal`, '"terminal" must be true or false.');
    if (s.title !== undefined && typeof s.title !== 'string') this.schema('structure', 'INVALID_PROPERTY_TYPE', `${pointer}/title`, '"title" must be a string.');
    const info: ScreenInfo = { index, id, pointer, terminal: s.terminal === true, data: new Map(), inputs: new Set(), footers: 0, components: 0, actions: [] };
    if (id && !this.byId.has(id)) this.byId.set(id, info);
    this.screens.push(info);
    this.collectData(info, s.data);
    const layout = s.layout;
    if (!isObj(layout)) {
      this.schema('structure', 'REQUIRED_PROPERTY_MISSING', pointer, `Screen "${id || index}" needs a "layout": { "type": "SingleColumnLayout", "children": [...] }.`);
    } else {
      if (layout.type !== 'SingleColumnLayout') this.schema('structure', 'INVALID_PROPERTY_VALUE', `${pointer}/layout/type`, 'The layout "type" must be "SingleColumnLayout".');
      if (!Array.isArray(layout.children)) this.schema('structure', 'REQUIRED_PROPERTY_MISSING', `${pointer}/layout`, 'The layout needs a "children" array of components.');
      else this.collectChildren(info, layout.children, `${pointer}/layout/children`);
    }
    if (info.components > MAX_COMPONENTS_PER_SCREEN) {
      this.add('limits', 'TOO_MANY_COMPONENTS', `${pointer}/layout/children`, `Screen "${id}" has ${info.components} components; a screen may have at most ${MAX_COMPONENTS_PER_SCREEN}.`);
    }
    if (s.sensitive !== undefined) {
      if (!Array.isArray(s.sensitive)) this.schema('sensitive', 'INVALID_PROPERTY_TYPE', `${pointer}/sensitive`, '"sensitive" must be an array of input names.');
      else
        s.sensitive.forEach((n, i) => {
          if (typeof n !== 'string' || !info.inputs.has(n)) {
            this.add('sensitive', 'UNKNOWN_SENSITIVE_FIELD', `${pointer}/sensitive/${i}`, `"${String(n)}" is listed as sensitive but no input of screen "${id}" has that name.`);
          }
        });
    }
  }

  collectData(info: ScreenInfo, data: unknown): void {
    if (data === undefined) return;
    const p = `${info.pointer}/data`;
    if (!isObj(data)) {
      this.schema('structure', 'INVALID_PROPERTY_TYPE', p, '"data" must be an object declaring each field with its "type" and "__example__".');
      return;
    }
    for (const [k, decl] of Object.entries(data)) {
      const dp = `${p}/${escapePointer(k)}`;
      if (!isObj(decl)) {
        this.schema('references', 'INVALID_PROPERTY_TYPE', dp, `Data field "${k}" must be declared as { "type": …, "__example__": … }.`);
        info.data.set(k, { hasExample: false });
        continue;
      }
      if (typeof decl.type !== 'string' || !(DATA_TYPES as readonly string[]).includes(decl.type)) {
        this.schema('references', 'INVALID_PROPERTY_VALUE', dp, `Data field "${k}" needs a "type" (${DATA_TYPES.join(', ')}).`);
      }
      const hasExample = '__example__' in decl;
      if (!hasExample) this.add('references', 'MISSING_EXAMPLE', dp, `Data field "${k}" of screen "${info.id}" needs an "__example__" value.`);
      info.data.set(k, { hasExample });
    }
  }

  collectChildren(info: ScreenInfo, children: unknown[], pointer: string): void {
    children.forEach((c, i) => this.collectComponent(info, c, `${pointer}/${i}`));
  }

  collectComponent(info: ScreenInfo, c: unknown, pointer: string): void {
    if (!isObj(c) || typeof c.type !== 'string') {
      this.schema('components', 'REQUIRED_PROPERTY_MISSING', pointer, 'A component must be an object with a "type".');
      return;
    }
    info.components++;
    const spec = COMPONENTS[c.type];
    if (!spec) {
      const near = Object.keys(COMPONENTS).find((k) => k.toLowerCase() === String(c.type).toLowerCase());
      this.add('components', 'UNKNOWN_COMPONENT', `${pointer}/type`, `Unknown component "${c.type}"${near ? ` (did you mean "${near}"?)` : ''}.`);
      return;
    }
    if (!this.atLeast(spec.since)) {
      this.add('min_version', 'COMPONENT_NOT_SUPPORTED_IN_VERSION', `${pointer}/type`, `${c.type} needs Flow JSON version ${spec.since} or later; this flow is ${this.versionText}.`);
    }
    const rel = pointer.slice(info.pointer.length);
    for (const k of Object.keys(c)) {
      if (k === 'type' || spec.props.includes(k)) continue;
      const hint = spec.props.includes(dashed(k)) ? ` Use "${dashed(k)}".` : '';
      this.schema('components', 'INVALID_PROPERTY', `${pointer}/${escapePointer(k)}`, `The property "${k}" cannot be specified at "$root/screens/${info.index}${rel}" (${c.type}).${hint}`);
    }
    for (const k of spec.required) {
      if (c[k] === undefined) this.schema('components', 'REQUIRED_PROPERTY_MISSING', pointer, `${c.type} needs the property "${k}".`);
    }
    for (const [k, max] of Object.entries(spec.textLimits ?? {})) {
      const v = c[k];
      // Code points, counted only when the UTF-16 length could exceed the limit.
      if (typeof v === 'string' && v.length > max && !v.includes('${') && [...v].length > max) {
        this.add('limits', 'TEXT_TOO_LONG', `${pointer}/${escapePointer(k)}`, `${c.type} "${k}" has ${[...v].length} characters; at most ${max} are allowed.`);
      }
    }
    if (spec.options) {
      const list = c[spec.options.prop];
      if (Array.isArray(list)) {
        const { min, max } = spec.options;
        if (list.length > max) this.add('limits', 'TOO_MANY_OPTIONS', `${pointer}/${spec.options.prop}`, `${c.type} has ${list.length} items in "${spec.options.prop}"; at most ${max} are allowed.`);
        else if (list.length < min) this.add('limits', 'TOO_FEW_OPTIONS', `${pointer}/${spec.options.prop}`, `${c.type} needs at least ${min} items in "${spec.options.prop}".`);
        if (c.type === 'Dropdown' && list.length > 100 && list.some((o) => isObj(o) && o.image !== undefined)) {
          this.add('limits', 'TOO_MANY_OPTIONS', `${pointer}/${spec.options.prop}`, `A Dropdown with images may have at most 100 options; it has ${list.length}.`);
        }
      } else if (list !== undefined && typeof list !== 'string') {
        this.schema('components', 'INVALID_PROPERTY_TYPE', `${pointer}/${spec.options.prop}`, `"${spec.options.prop}" must be an array or a "\${data.…}" reference.`);
      }
    }
    if (spec.input && typeof c.name === 'string') {
      if (info.inputs.has(c.name)) this.add('components', 'DUPLICATE_INPUT_NAME', `${pointer}/name`, `Two inputs of screen "${info.id}" are named "${c.name}".`);
      info.inputs.add(c.name);
    }
    if (c.type === 'Footer') info.footers++;
    for (const a of spec.actions ?? []) if (c[a] !== undefined) this.collectAction(info, c[a], `${pointer}/${a}`);
    if (c.type === 'NavigationList' && Array.isArray(c['list-items'])) {
      c['list-items'].forEach((item, i) => {
        if (isObj(item) && item['on-click-action'] !== undefined) this.collectAction(info, item['on-click-action'], `${pointer}/list-items/${i}/on-click-action`);
      });
    }
    for (const prop of spec.children ?? []) {
      const list = c[prop];
      if (Array.isArray(list)) this.collectChildren(info, list, `${pointer}/${prop}`);
      else if (list !== undefined) this.schema('components', 'INVALID_PROPERTY_TYPE', `${pointer}/${prop}`, `"${prop}" must be an array of components.`);
    }
    if (c.type === 'Switch' && isObj(c.cases)) {
      for (const [k, list] of Object.entries(c.cases)) if (Array.isArray(list)) this.collectChildren(info, list, `${pointer}/cases/${escapePointer(k)}`);
    }
    this.collectRefs(info, c, pointer);
  }

  collectAction(info: ScreenInfo, a: unknown, pointer: string): void {
    if (!isObj(a) || typeof a.name !== 'string') {
      this.schema('components', 'INVALID_PROPERTY_TYPE', pointer, 'An action must be an object with a "name" (navigate, complete, data_exchange, update_data, open_url).');
      return;
    }
    const spec = ACTIONS[a.name];
    if (!spec) {
      this.add('components', 'UNKNOWN_ACTION', `${pointer}/name`, `Unknown action "${a.name}"; use one of ${Object.keys(ACTIONS).join(', ')}.`);
      return;
    }
    if (!this.atLeast(spec.since)) {
      this.add('min_version', 'ACTION_NOT_SUPPORTED_IN_VERSION', `${pointer}/name`, `The ${a.name} action needs Flow JSON version ${spec.since} or later; this flow is ${this.versionText}.`);
    }
    for (const k of Object.keys(a)) {
      if (!spec.props.includes(k)) this.schema('components', 'INVALID_PROPERTY', `${pointer}/${escapePointer(k)}`, `The property "${k}" cannot be specified on a ${a.name} action.`);
    }
    if (a.payload !== undefined && !isObj(a.payload)) this.schema('components', 'INVALID_PROPERTY_TYPE', `${pointer}/payload`, 'An action "payload" must be an object.');
    info.actions.push({ pointer, name: a.name, action: a });
  }

  /** Records the `${…}` references in a component's own properties (not its child components). */
  collectRefs(info: ScreenInfo, c: Obj, pointer: string): void {
    const spec = COMPONENTS[String(c.type)];
    const skip = new Set(spec?.children ?? []);
    if (c.type === 'Switch') skip.add('cases');
    // Pointers are built only for strings that hold a binding.
    const visit = (v: unknown, p: () => string): void => {
      if (typeof v === 'string') {
        if (!v.includes('${')) return;
        const at = p();
        for (const m of v.matchAll(BINDING)) {
          for (const r of m[1].matchAll(REF)) this.refs.push({ screen: info, pointer: at, scope: r[1], kind: r[2], name: r[3] });
        }
      } else if (Array.isArray(v)) v.forEach((x, i) => visit(x, () => `${p()}/${i}`));
      else if (isObj(v)) for (const k in v) visit(v[k], () => `${p()}/${escapePointer(k)}`);
    };
    for (const k in c) if (!skip.has(k)) visit(c[k], () => `${pointer}/${escapePointer(k)}`);
  }

  /** Empty strings anywhere; the pointer is built only for a finding (the walk keeps a path). */
  emptyStrings(v: unknown, path: (string | number)[]): void {
    if (v === '') {
      const p = path.length ? '/' + path.map((x) => escapePointer(x)).join('/') : '';
      this.add('empty_string', 'EMPTY_STRING', p, `Empty strings are not allowed from Flow JSON 6.0 on (at ${p || '/'}): remove the property or give it a value.`);
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x = v[i];
        if (typeof x === 'object' ? x !== null : x === '') {
          path.push(i);
          this.emptyStrings(x, path);
          path.pop();
        }
      }
    } else if (isObj(v)) {
      for (const k in v) {
        const x = v[k];
        if (typeof x === 'object' ? x !== null : x === '') {
          path.push(k);
          this.emptyStrings(x, path);
          path.pop();
        }
      }
    }
  }

  // --- screens --------------------------------------------------------------------------------

  checkScreens(): void {
    const terminals = this.screens.filter((s) => s.terminal);
    if (terminals.length === 0) this.add('terminal', 'NO_TERMINAL_SCREEN', '/screens', 'The flow needs at least one terminal screen ("terminal": true) with a Footer.');
    for (const s of this.screens) {
      if (s.terminal && s.footers === 0) this.add('terminal', 'TERMINAL_WITHOUT_FOOTER', s.pointer, `Terminal screen "${s.id}" needs a Footer component.`);
      if (s.footers > 1) this.add('components', 'TOO_MANY_FOOTERS', s.pointer, `Screen "${s.id}" has ${s.footers} Footers; a screen has at most one.`);
      for (const a of s.actions) {
        if (a.name === 'complete' && !s.terminal) {
          this.add('complete', 'COMPLETE_ON_NON_TERMINAL', `${a.pointer}/name`, `The complete action is allowed only on terminal screens; screen "${s.id}" is not terminal.`);
        }
        if (a.name === 'navigate') this.checkNavigate(s, a);
      }
    }
  }

  checkNavigate(s: ScreenInfo, a: ActionUse): void {
    const next = a.action.next;
    if (!isObj(next) || typeof next.name !== 'string') {
      this.schema('navigate', 'REQUIRED_PROPERTY_MISSING', a.pointer, 'A navigate action needs "next": { "type": "screen", "name": <screen id> }.');
      return;
    }
    const target = this.byId.get(next.name);
    if (!target) {
      this.add('navigate', 'UNKNOWN_SCREEN', `${a.pointer}/next/name`, `Navigate target "${next.name}" is not a screen of this flow.`);
      return;
    }
    const payload = isObj(a.action.payload) ? a.action.payload : {};
    const missing = [...target.data.keys()].filter((k) => !(k in payload));
    if (missing.length) {
      this.add(
        'navigate',
        'MISSING_NAVIGATE_PAYLOAD',
        a.pointer,
        `Navigating to "${target.id}" must provide its declared data ${missing.map((m) => `"${m}"`).join(', ')} in "payload".`,
      );
    }
  }

}

/** " Use \"routing_model\"." when a property differs from a known one only by case or separators. */
function hint(k: string, known: readonly string[]): string {
  const norm = (x: string) => x.toLowerCase().replace(/[-_]/g, '');
  const near = known.find((x) => norm(x) === norm(k));
  return near ? ` Use "${near}".` : '';
}

function toLetters(id: string): string {
  const words = ['ZERO', 'ONE', 'TWO', 'THREE', 'FOUR', 'FIVE', 'SIX', 'SEVEN', 'EIGHT', 'NINE'];
  return id.replace(/_?(\d)/g, (_m, d: string) => `_${words[Number(d)]}`).replace(/[^A-Za-z_]/g, '_');
}

export function checkFlow(flow: unknown): RawFinding[] {
  return new Checker().run(flow);
}
