/** What the graph checks (graph.ts) see of the validator's state (rules.ts: Checker). */
import type { ErrorType, Rule, Severity } from './findings.js';

type Obj = Record<string, unknown>;

export interface ActionUse {
  pointer: string;
  name: string;
  action: Obj;
}

export interface ScreenInfo {
  index: number;
  id: string;
  pointer: string;
  terminal: boolean;
  data: Map<string, { hasExample: boolean }>;
  inputs: Set<string>;
  footers: number;
  components: number;
  actions: ActionUse[];
}

export interface CheckContext {
  screens: ScreenInfo[];
  screenObjects: Obj[];
  byId: Map<string, ScreenInfo>;
  refs: { screen: ScreenInfo; pointer: string; scope: string | undefined; kind: string; name: string }[];
  add(rule: Rule, error: string, pointer: string, message: string, severity?: Severity, type?: ErrorType): void;
  schema(rule: Rule, error: string, pointer: string, message: string): void;
}
