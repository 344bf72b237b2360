/**
 * Flow generators: one interface, two implementations. The deterministic one (here) is always
 * available and turns a structured description into Flow JSON; the language-model one
 * (model-generator.ts) is used for descriptions in words when configured. Whatever a generator
 * returns is validated by the caller (service.ts); a generator never stores anything.
 *
 * The deterministic layout: one screen per described screen, in order; each screen passes what was
 * collected so far to the next (`navigate` with a payload that covers the next screen's `data`);
 * the last screen is terminal and its Footer completes the flow with every field. The same
 * description always gives the same text.
 */
import type { components } from '../../generated/api.js';
import { ApiError } from '../platform/errors.js';
import { ACTIVE_VERSIONS, DEFAULT_FLOW_VERSION, type FlowFinding } from './validator/index.js';
import { COMPONENTS } from './validator/catalog.js';

type ApiField = components['schemas']['FlowFieldDescription'];
type ApiScreen = components['schemas']['FlowScreenDescription'];
/** A field as described (`required` defaults to false). */
type FieldDescription = Omit<ApiField, 'required'> & { required?: boolean };
/** The structured description of POST /v1/flows/generate, defaults optional. */
export type FlowDescription = Omit<components['schemas']['FlowDescription'], 'screens'> & {
  screens: (Omit<ApiScreen, 'fields'> & { fields?: FieldDescription[] })[];
};

export interface GenerateRequest {
  name: string;
  version: string;
  description?: FlowDescription;
  /** The flow in words (model only). */
  prompt?: string;
  /** Update in words: the current definition and the change (model only). */
  current?: string;
  instruction?: string;
  /** A second attempt: the previous output and what was wrong with it. */
  previous?: { output: string; findings: FlowFinding[] };
}

export interface FlowGenerator {
  readonly kind: 'deterministic' | 'model';
  /** Flow JSON, as text or as a value; the caller validates it. */
  generate(req: GenerateRequest): Promise<string | unknown>;
}

/** A generator that could not answer at all (the model timed out, was unreachable, answered no content). */
export class GeneratorError extends Error {
  constructor(
    readonly reason: 'timeout' | 'unreachable' | 'bad_response',
    message: string,
  ) {
    super(message);
    this.name = 'GeneratorError';
  }
}

interface FieldPlan {
  component: string;
  inputType?: string;
  dataType: 'string' | 'array' | 'boolean';
  example: unknown;
}

const PLANS: Record<FieldDescription['type'], FieldPlan> = {
  text: { component: 'TextInput', inputType: 'text', dataType: 'string', example: 'Ada Lovelace' },
  email: { component: 'TextInput', inputType: 'email', dataType: 'string', example: 'ada@example.com' },
  phone: { component: 'TextInput', inputType: 'phone', dataType: 'string', example: '+14155550123' },
  number: { component: 'TextInput', inputType: 'number', dataType: 'string', example: '42' },
  password: { component: 'TextInput', inputType: 'password', dataType: 'string', example: 'secret' },
  paragraph: { component: 'TextArea', dataType: 'string', example: 'A few words' },
  date: { component: 'DatePicker', dataType: 'string', example: '2026-01-31' },
  single_choice: { component: 'RadioButtonsGroup', dataType: 'string', example: null },
  multiple_choice: { component: 'CheckboxGroup', dataType: 'array', example: null },
  dropdown: { component: 'Dropdown', dataType: 'string', example: null },
  opt_in: { component: 'OptIn', dataType: 'boolean', example: true },
};

const CHOICE_TYPES = new Set(['single_choice', 'multiple_choice', 'dropdown']);

function choiceId(title: string, i: number): string {
  const id = title
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 40);
  return id ? id : `option_${i + 1}`;
}

function screenIdOf(title: string): string {
  const id = title
    .toUpperCase()
    .normalize('NFKD')
    .replace(/[^A-Z]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 60);
  if (!id) return 'SCREEN';
  return id === 'SUCCESS' ? 'SUCCESS_SCREEN' : id;
}

function suffix(n: number): string {
  let s = '';
  do {
    s = String.fromCharCode(65 + (n % 26)) + s;
    n = Math.floor(n / 26) - 1;
  } while (n >= 0);
  return s;
}

/**
 * The description's contradictions with itself or with the component limits, as
 * `{ field, message }` (400 `invalid_request`); empty when it can be built.
 */
export function checkDescription(d: FlowDescription, version: string): { field: string; message: string }[] {
  const out: { field: string; message: string }[] = [];
  if (!(ACTIVE_VERSIONS as readonly string[]).includes(version)) {
    out.push({ field: 'version', message: `Flow JSON version "${version}" cannot be generated: use one of ${ACTIVE_VERSIONS.join(', ')}.` });
  }
  const names = new Map<string, string>();
  const ids = new Set<string>();
  let fields = 0;
  d.screens.forEach((s, i) => {
    const at = `description.screens[${i}]`;
    if (s.id !== undefined) {
      if (s.id === 'SUCCESS') out.push({ field: `${at}.id`, message: 'The screen id SUCCESS is reserved by WhatsApp.' });
      if (ids.has(s.id)) out.push({ field: `${at}.id`, message: `Two screens have the id ${s.id}.` });
      ids.add(s.id);
    }
    const list = s.fields ?? [];
    fields += list.length;
    if (list.length + (s.text ? 1 : 0) + 1 > 50) out.push({ field: `${at}.fields`, message: 'A screen holds at most 50 components (the fields, the text and the footer).' });
    list.forEach((f, j) => {
      const fat = `${at}.fields[${j}]`;
      const plan = PLANS[f.type];
      const spec = COMPONENTS[plan.component];
      if (names.has(f.name)) out.push({ field: `${fat}.name`, message: `The field name "${f.name}" is used by ${names.get(f.name)} already: names are keys of the completion payload.` });
      names.set(f.name, fat);
      const labelMax = spec.textLimits?.label;
      if (labelMax !== undefined && [...f.label].length > labelMax) {
        out.push({ field: `${fat}.label`, message: `A ${f.type} field's label (${plan.component}) has at most ${labelMax} characters; this one has ${[...f.label].length}.` });
      }
      if (f.helper_text !== undefined && !spec.props.includes('helper-text')) {
        out.push({ field: `${fat}.helper_text`, message: `A ${f.type} field (${plan.component}) has no helper text.` });
      }
      if (CHOICE_TYPES.has(f.type)) {
        const choices = f.choices ?? [];
        const max = spec.options!.max;
        if (choices.length === 0) out.push({ field: `${fat}.choices`, message: `A ${f.type} field needs choices.` });
        else if (choices.length > max) out.push({ field: `${fat}.choices`, message: `A ${f.type} field takes at most ${max} choices; this one has ${choices.length}.` });
        const seen = new Set<string>();
        choices.forEach((c, k) => {
          const id = choiceId(c, k);
          if (seen.has(id)) out.push({ field: `${fat}.choices[${k}]`, message: `The choice "${c}" repeats another one.` });
          seen.add(id);
        });
      } else if (f.choices !== undefined) {
        out.push({ field: `${fat}.choices`, message: `A ${f.type} field takes no choices: use single_choice, multiple_choice or dropdown.` });
      }
    });
  });
  if (fields === 0) out.push({ field: 'description.screens', message: 'The description has no field: a flow collects at least one answer.' });
  return out;
}

function component(f: FieldDescription): Record<string, unknown> {
  const plan = PLANS[f.type];
  const c: Record<string, unknown> = { type: plan.component, name: f.name, label: f.label };
  if (plan.inputType) c['input-type'] = plan.inputType;
  if (f.required) c.required = true;
  if (f.helper_text) c['helper-text'] = f.helper_text;
  if (CHOICE_TYPES.has(f.type)) c['data-source'] = (f.choices ?? []).map((t, i) => ({ id: choiceId(t, i), title: t }));
  return c;
}

function example(f: FieldDescription): unknown {
  const plan = PLANS[f.type];
  if (plan.example !== null) return plan.example;
  const first = choiceId(f.choices?.[0] ?? 'option', 0);
  return f.type === 'multiple_choice' ? [first] : first;
}

function declaration(f: FieldDescription): Record<string, unknown> {
  const plan = PLANS[f.type];
  return plan.dataType === 'array' ? { type: 'array', items: { type: 'string' }, __example__: example(f) } : { type: plan.dataType, __example__: example(f) };
}

/** Builds the flow from a structured description (checked with checkDescription first). */
export function buildFlow(d: FlowDescription, version: string = DEFAULT_FLOW_VERSION): Record<string, unknown> {
  const used = new Set<string>();
  const ids = d.screens.map((s) => {
    const base = s.id ?? screenIdOf(s.title);
    let id = base;
    for (let n = 0; used.has(id); n++) id = `${base}_${suffix(n)}`;
    used.add(id);
    return id;
  });
  const before: FieldDescription[] = [];
  const screens = d.screens.map((s, i) => {
    const last = i === d.screens.length - 1;
    const fields = s.fields ?? [];
    const data: Record<string, unknown> = {};
    for (const f of before) data[f.name] = declaration(f);
    const payload: Record<string, string> = {};
    for (const f of before) payload[f.name] = `\${data.${f.name}}`;
    for (const f of fields) payload[f.name] = `\${form.${f.name}}`;
    const children: Record<string, unknown>[] = [];
    if (s.text) children.push({ type: 'TextBody', text: s.text });
    for (const f of fields) children.push(component(f));
    children.push({
      type: 'Footer',
      label: last ? (d.final_action?.label ?? s.next_label ?? 'Submit') : (s.next_label ?? 'Continue'),
      'on-click-action': last ? { name: 'complete', payload } : { name: 'navigate', next: { type: 'screen', name: ids[i + 1] }, payload },
    });
    before.push(...fields);
    const screen: Record<string, unknown> = { id: ids[i], title: s.title };
    if (last) Object.assign(screen, { terminal: true, success: true });
    if (Object.keys(data).length) screen.data = data;
    screen.layout = { type: 'SingleColumnLayout', children };
    return screen;
  });
  return { version, screens };
}

export const deterministicGenerator: FlowGenerator = {
  kind: 'deterministic',
  async generate(req) {
    if (!req.description) throw new ApiError('invalid_request', 'The deterministic generator needs a structured `description`.');
    return buildFlow(req.description, req.version);
  },
};
