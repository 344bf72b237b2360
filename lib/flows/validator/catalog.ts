/**
 * What the validator knows about Flow JSON, as data: versions and their state, components with
 * their properties, minimum versions, text limits and option counts, and actions with their
 * minimum versions. Sources: Meta's Flow JSON reference (flowjson, components, versioning,
 * changelogs); the limits are the ones the reference states per component.
 *
 * Policy: a version that Meta has frozen (no publishing) or that we do not know is refused; the
 * default for generation is the latest active version.
 */

export const DEFAULT_FLOW_VERSION = '7.3';
export const DATA_API_VERSIONS = ['3.0'] as const;
/** Meta's limit on one Flow JSON asset. */
export const MAX_FLOW_BYTES = 10 * 1024 * 1024;
export const MAX_COMPONENTS_PER_SCREEN = 50;

/** Versions Meta still accepts for new flows and publishing. */
export const ACTIVE_VERSIONS = ['5.1', '6.0', '6.1', '6.2', '6.3', '7.0', '7.1', '7.2', '7.3'] as const;
/** Versions Meta has frozen or expired: flows in them can no longer be published. */
export const FROZEN_VERSIONS = ['1.0', '2.0', '2.1', '3.0', '3.1', '4.0', '5.0'] as const;

/** "6.3" → 603, for comparisons; NaN for anything not major.minor. */
export function versionNumber(v: string): number {
  const m = /^(\d{1,2})\.(\d{1,2})$/.exec(v);
  return m ? Number(m[1]) * 100 + Number(m[2]) : NaN;
}

export type InputKind = 'text' | 'selection' | 'boolean' | 'date' | 'media' | 'none';

export interface ComponentSpec {
  /** First Flow JSON version with the component. */
  since: string;
  /** Properties the component accepts besides `type` and `visible`. */
  props: readonly string[];
  required: readonly string[];
  /** Literal text limits, in characters. */
  textLimits?: Record<string, number>;
  /** Option list property and its bounds. */
  options?: { prop: string; min: number; max: number };
  /** Action properties (on-click-action …). */
  actions?: readonly string[];
  /** The component yields a form value under `name`. */
  input?: InputKind;
  /** Child component lists. */
  children?: readonly string[];
}

const common = ['visible'];

export const COMPONENTS: Record<string, ComponentSpec> = {
  TextHeading: { since: '1.0', props: ['text', ...common], required: ['text'], textLimits: { text: 80 } },
  TextSubheading: { since: '1.0', props: ['text', ...common], required: ['text'], textLimits: { text: 80 } },
  TextBody: { since: '1.0', props: ['text', 'font-weight', 'strikethrough', 'markdown', ...common], required: ['text'], textLimits: { text: 4096 } },
  TextCaption: { since: '1.0', props: ['text', 'font-weight', 'strikethrough', 'markdown', ...common], required: ['text'], textLimits: { text: 409 } },
  RichText: { since: '5.1', props: ['text', ...common], required: ['text'] },
  Image: { since: '1.0', props: ['src', 'width', 'height', 'scale-type', 'aspect-ratio', 'alt-text', ...common], required: ['src'], textLimits: { 'alt-text': 100 } },
  ImageCarousel: { since: '7.1', props: ['images', 'aspect-ratio', 'scale-type', ...common], required: ['images'], options: { prop: 'images', min: 1, max: 3 } },
  TextInput: {
    since: '1.0',
    props: ['name', 'label', 'label-variant', 'input-type', 'pattern', 'required', 'min-chars', 'max-chars', 'helper-text', 'init-value', 'error-message', ...common],
    required: ['name', 'label'],
    textLimits: { label: 20, 'helper-text': 80 },
    input: 'text',
  },
  TextArea: {
    since: '1.0',
    props: ['name', 'label', 'label-variant', 'required', 'max-length', 'helper-text', 'enabled', 'init-value', 'error-message', ...common],
    required: ['name', 'label'],
    textLimits: { label: 20, 'helper-text': 80 },
    input: 'text',
  },
  CheckboxGroup: {
    since: '1.0',
    props: ['name', 'label', 'description', 'data-source', 'min-selected-items', 'max-selected-items', 'required', 'enabled', 'init-value', 'error-message', 'media-size', 'on-select-action', 'on-unselect-action', ...common],
    required: ['name', 'data-source'],
    textLimits: { label: 30, description: 300 },
    options: { prop: 'data-source', min: 1, max: 20 },
    actions: ['on-select-action', 'on-unselect-action'],
    input: 'selection',
  },
  RadioButtonsGroup: {
    since: '1.0',
    props: ['name', 'label', 'description', 'data-source', 'required', 'enabled', 'init-value', 'error-message', 'media-size', 'on-select-action', 'on-unselect-action', ...common],
    required: ['name', 'data-source'],
    textLimits: { label: 30, description: 300 },
    options: { prop: 'data-source', min: 1, max: 20 },
    actions: ['on-select-action', 'on-unselect-action'],
    input: 'selection',
  },
  Dropdown: {
    since: '1.0',
    props: ['name', 'label', 'data-source', 'required', 'enabled', 'init-value', 'error-message', 'on-select-action', 'on-unselect-action', ...common],
    required: ['name', 'label', 'data-source'],
    textLimits: { label: 20 },
    options: { prop: 'data-source', min: 1, max: 200 },
    actions: ['on-select-action', 'on-unselect-action'],
    input: 'selection',
  },
  ChipsSelector: {
    since: '6.3',
    props: ['name', 'label', 'description', 'data-source', 'min-selected-items', 'max-selected-items', 'required', 'enabled', 'init-value', 'error-message', 'on-select-action', 'on-unselect-action', ...common],
    required: ['name', 'label', 'data-source'],
    textLimits: { label: 80, description: 300 },
    options: { prop: 'data-source', min: 2, max: 20 },
    actions: ['on-select-action', 'on-unselect-action'],
    input: 'selection',
  },
  OptIn: {
    since: '1.0',
    props: ['name', 'label', 'required', 'init-value', 'on-click-action', 'on-select-action', 'on-unselect-action', ...common],
    required: ['name', 'label'],
    textLimits: { label: 120 },
    actions: ['on-click-action', 'on-select-action', 'on-unselect-action'],
    input: 'boolean',
  },
  DatePicker: {
    since: '1.0',
    props: ['name', 'label', 'min-date', 'max-date', 'unavailable-dates', 'helper-text', 'required', 'enabled', 'init-value', 'error-message', 'on-select-action', ...common],
    required: ['name', 'label'],
    textLimits: { label: 40, 'helper-text': 80 },
    actions: ['on-select-action'],
    input: 'date',
  },
  CalendarPicker: {
    since: '6.1',
    props: ['name', 'title', 'description', 'label', 'helper-text', 'required', 'visible', 'enabled', 'mode', 'min-date', 'max-date', 'unavailable-dates', 'include-days', 'min-days', 'max-days', 'init-value', 'error-message', 'on-select-action'],
    required: ['name', 'label'],
    textLimits: { title: 80, description: 300 },
    actions: ['on-select-action'],
    input: 'date',
  },
  PhotoPicker: {
    since: '4.0',
    props: ['name', 'label', 'description', 'photo-source', 'max-file-size-kb', 'min-uploaded-photos', 'max-uploaded-photos', 'enabled', 'error-message', ...common],
    required: ['name', 'label'],
    textLimits: { label: 30, description: 300 },
    input: 'media',
  },
  DocumentPicker: {
    since: '4.0',
    props: ['name', 'label', 'description', 'max-file-size-kb', 'min-uploaded-documents', 'max-uploaded-documents', 'allowed-mime-types', 'enabled', 'error-message', ...common],
    required: ['name', 'label'],
    textLimits: { label: 30, description: 300 },
    input: 'media',
  },
  Footer: {
    since: '1.0',
    props: ['label', 'left-caption', 'center-caption', 'right-caption', 'enabled', 'on-click-action', ...common],
    required: ['label', 'on-click-action'],
    textLimits: { label: 35, 'left-caption': 15, 'center-caption': 15, 'right-caption': 15 },
    actions: ['on-click-action'],
  },
  EmbeddedLink: { since: '1.0', props: ['text', 'on-click-action', ...common], required: ['text', 'on-click-action'], textLimits: { text: 25 }, actions: ['on-click-action'] },
  NavigationList: {
    since: '6.2',
    props: ['name', 'label', 'description', 'list-items', 'media-size', 'on-click-action', ...common],
    required: ['name', 'list-items'],
    textLimits: { label: 80, description: 300 },
    options: { prop: 'list-items', min: 1, max: 20 },
    actions: ['on-click-action'],
  },
  Form: { since: '1.0', props: ['name', 'children', 'init-values', 'error-messages', ...common], required: ['name', 'children'], children: ['children'] },
  If: { since: '4.0', props: ['condition', 'then', 'else'], required: ['condition', 'then'], children: ['then', 'else'] },
  Switch: { since: '4.0', props: ['value', 'cases'], required: ['value', 'cases'] },
};

export interface ActionSpec {
  since: string;
  props: readonly string[];
}

export const ACTIONS: Record<string, ActionSpec> = {
  navigate: { since: '1.0', props: ['name', 'next', 'payload'] },
  complete: { since: '1.0', props: ['name', 'payload'] },
  data_exchange: { since: '3.0', props: ['name', 'payload'] },
  update_data: { since: '6.0', props: ['name', 'payload'] },
  open_url: { since: '6.0', props: ['name', 'url'] },
};

export const SCREEN_PROPS = ['id', 'title', 'terminal', 'success', 'refresh_on_back', 'data', 'layout', 'sensitive'] as const;
export const TOP_PROPS = ['version', 'data_api_version', 'routing_model', 'screens', 'data_channel_uri'] as const;
export const DATA_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array'] as const;

/** Screen ids: letters and underscores (Meta refuses digits in practice). */
export const SCREEN_ID = /^[A-Za-z_]+$/;
export const RESERVED_SCREEN_IDS = ['SUCCESS'];

/** Lower camel case of a dashed property, for hints ("onClickAction" → "on-click-action"). */
export function dashed(prop: string): string {
  return prop.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`).replace(/_/g, '-');
}
