/**
 * The rules over the whole flow, run after the screens were collected (rules.ts): data API version,
 * routing model against the navigate actions, cycles, reachability, and `${…}` references.
 */
import { DATA_API_VERSIONS } from './catalog.js';
import { escapePointer } from './positions.js';
import type { CheckContext as Checker } from './context.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

// --- routing --------------------------------------------------------------------------------

export function checkRouting(c: Checker, flow: Obj): void {
  const usesExchange = c.screens.some((s) => s.actions.some((a) => a.name === 'data_exchange'));
  const dav = flow.data_api_version;
  if (usesExchange && dav === undefined) {
    c.add('data_api_version', 'MISSING_DATA_API_VERSION', '', `The flow uses data_exchange: "data_api_version" ("${DATA_API_VERSIONS[0]}") is required.`);
  } else if (!usesExchange && dav !== undefined) {
    c.add('data_api_version', 'UNEXPECTED_DATA_API_VERSION', '/data_api_version', '"data_api_version" is set but no screen uses data_exchange: remove it, or use an endpoint action.');
  } else if (dav !== undefined && !(DATA_API_VERSIONS as readonly unknown[]).includes(dav)) {
    c.add('data_api_version', 'INVALID_DATA_API_VERSION', '/data_api_version', `"data_api_version" must be "${DATA_API_VERSIONS[0]}".`);
  }
  if (dav === undefined) {
    c.screenObjects.forEach((sc, i) => {
      if (sc.refresh_on_back !== undefined) {
        c.add('data_api_version', 'REFRESH_ON_BACK_WITHOUT_ENDPOINT', `/screens/${i}/refresh_on_back`, '"refresh_on_back" asks the endpoint for fresh data: it needs "data_api_version" and a data_exchange endpoint.');
      }
    });
  }

  const edges = new Map<string, Set<string>>();
  const addEdge = (a: string, b: string) => {
    if (!edges.has(a)) edges.set(a, new Set());
    edges.get(a)!.add(b);
  };
  const rm = flow.routing_model;
  let model: Map<string, Set<string>> | undefined;
  if (rm !== undefined) {
    if (!isObj(rm)) c.schema('routing_model', 'INVALID_PROPERTY_TYPE', '/routing_model', '"routing_model" must map each screen id to the ids it can go to.');
    else {
      model = new Map();
      for (const [from, tos] of Object.entries(rm)) {
        const p = `/routing_model/${escapePointer(from)}`;
        if (!c.byId.has(from)) c.add('routing_model', 'ROUTING_MODEL_UNKNOWN_SCREEN', p, `routing_model names "${from}", which is not a screen of this flow.`);
        if (!Array.isArray(tos)) {
          c.schema('routing_model', 'INVALID_PROPERTY_TYPE', p, `routing_model["${from}"] must be an array of screen ids.`);
          continue;
        }
        const set = new Set<string>();
        tos.forEach((t, i) => {
          if (typeof t !== 'string' || !c.byId.has(t)) c.add('routing_model', 'ROUTING_MODEL_UNKNOWN_SCREEN', `${p}/${i}`, `routing_model sends "${from}" to "${String(t)}", which is not a screen of this flow.`);
          else {
            set.add(t);
            addEdge(from, t);
          }
        });
        model.set(from, set);
      }
    }
  } else if (usesExchange) {
    c.add('routing_model', 'MISSING_ROUTING_MODEL', '', 'A flow that uses data_exchange needs a "routing_model" listing where each screen can go.');
  }

  for (const s of c.screens) {
    for (const a of s.actions) {
      if (a.name !== 'navigate' || !isObj(a.action.next)) continue;
      const to = a.action.next.name;
      if (typeof to !== 'string' || !c.byId.has(to)) continue;
      if (model && !model.get(s.id)?.has(to)) {
        c.add('routing_model', 'NAVIGATE_NOT_IN_ROUTING_MODEL', `${a.pointer}/next/name`, `Screen "${s.id}" navigates to "${to}", but routing_model does not list that route: add "${to}" to routing_model["${s.id}"].`);
      }
      addEdge(s.id, to);
    }
  }

  checkCycles(c, edges);
  // Reachability from the first screen (an endpoint flow without a routing model: the server decides).
  const first = c.screens[0]?.id;
  if (!first || (usesExchange && !model)) return;
  const seen = new Set([first]);
  const queue = [first];
  while (queue.length) for (const n of edges.get(queue.shift()!) ?? []) if (!seen.has(n)) seen.add(n), queue.push(n);
  for (const s of c.screens) {
    if (s.id && !seen.has(s.id) && c.byId.get(s.id) === s) {
      c.add('reachability', 'UNREACHABLE_SCREEN', s.pointer, `Screen "${s.id}" cannot be reached from the first screen "${first}".`, 'warning');
    }
  }
}

function checkCycles(c: Checker, edges: Map<string, Set<string>>): void {
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const reported = new Set<string>();
  const dfs = (n: string): void => {
    state.set(n, 1);
    stack.push(n);
    for (const m of edges.get(n) ?? []) {
      if (state.get(m) === 1) {
        const cycle = [...stack.slice(stack.indexOf(m)), m];
        const key = [...cycle].sort().join(',');
        if (!reported.has(key)) {
          reported.add(key);
          const from = c.byId.get(n)!;
          c.add('routing_model', 'ROUTING_CYCLE', from ? from.pointer : '/routing_model', `The routes form a cycle: ${cycle.join(' → ')}. Flows go forward; the back button returns.`);
        }
      } else if (!state.has(m)) dfs(m);
    }
    stack.pop();
    state.set(n, 2);
  };
  for (const n of edges.keys()) if (!state.has(n)) dfs(n);
}

// --- references -----------------------------------------------------------------------------

export function checkReferences(c: Checker): void {
  for (const r of c.refs) {
    let screen = r.screen;
    if (r.scope !== undefined) {
      const other = c.byId.get(r.scope);
      if (!other) {
        c.add('references', 'UNKNOWN_SCREEN_REFERENCE', r.pointer, `The reference to screen "${r.scope}" names no screen of this flow.`);
        continue;
      }
      screen = other;
    }
    if (r.kind === 'data') {
      const d = screen.data.get(r.name);
      if (!d) {
        c.add('references', 'UNDECLARED_DATA_REFERENCE', r.pointer, `\${data.${r.name}} is used but screen "${screen.id}" declares no data field "${r.name}" (declare it in "data" with a "type" and an "__example__").`);
      }
    } else if (!screen.inputs.has(r.name)) {
      c.add('references', 'UNKNOWN_FORM_REFERENCE', r.pointer, `\${form.${r.name}} is used but screen "${screen.id}" has no input named "${r.name}".`);
    }
  }
}
