/**
 * The Flow JSON validator through its fixture corpus (tests/fixtures/flows/corpus.json): every
 * rule has valid flows that pass and invalid flows whose findings name the expected error, JSON
 * pointer and position, in Meta's shape plus severity. No database needed.
 */
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RULES, validateFlowJson, type FlowFinding } from '../../lib/flows/validator/index.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'flows');

interface Expectation {
  error: string;
  pointer?: string;
  line?: number;
  severity?: 'error' | 'warning';
}
interface Entry {
  file: string;
  valid?: boolean;
  rule?: string;
  rules?: string[];
  expect?: Expectation[];
  allowOthers?: string[];
  options?: { maxBytes?: number };
}

const corpus = JSON.parse(readFileSync(path.join(dir, 'corpus.json'), 'utf8')) as Entry[];
const text = (e: Entry) => readFileSync(path.join(dir, e.file), 'utf8');

function expectMetaShape(f: FlowFinding): void {
  expect(typeof f.error).toBe('string');
  expect(['JSON_SYNTAX_ERROR', 'JSON_SCHEMA_ERROR', 'FLOW_JSON_ERROR']).toContain(f.error_type);
  expect(f.message.length).toBeGreaterThan(10);
  expect(['error', 'warning']).toContain(f.severity);
  for (const k of ['line_start', 'line_end', 'column_start', 'column_end'] as const) expect(f[k]).toBeGreaterThanOrEqual(1);
  expect(typeof f.pointer).toBe('string');
}

describe('validateFlowJson: the corpus covers every rule', () => {
  it('When the corpus is read, then each rule has at least one valid and one invalid flow', () => {
    for (const rule of RULES) {
      expect({ rule, valid: corpus.some((e) => e.valid && !e.rule && e.rules?.includes(rule)) }).toEqual({ rule, valid: true });
      expect({ rule, invalid: corpus.some((e) => e.rule === rule) }).toEqual({ rule, invalid: true });
    }
  });
});

describe('validateFlowJson: valid flows', () => {
  for (const e of corpus.filter((x) => x.valid && !x.rule)) {
    it(`When ${e.file} is validated, then it has no findings`, () => {
      const r = validateFlowJson(text(e), e.options);
      expect(r.findings).toEqual([]);
      expect(r.valid).toBe(true);
    });
  }
});

describe('validateFlowJson: invalid flows', () => {
  for (const e of corpus.filter((x) => x.rule)) {
    it(`When ${e.file} is validated, then it reports ${e.expect!.map((x) => x.error).join(', ')}`, () => {
      const r = validateFlowJson(text(e), e.options);
      for (const f of r.findings) expectMetaShape(f);
      for (const want of e.expect!) {
        const hit = r.findings.find((f) => f.error === want.error && (want.pointer === undefined || f.pointer === want.pointer));
        expect({ want, findings: hit ? 'found' : r.findings.map((f) => `${f.error} ${f.pointer}`) }).toEqual({ want, findings: 'found' });
        expect(hit!.severity).toBe(want.severity ?? 'error');
        if (want.line !== undefined) expect(hit!.line_start).toBe(want.line);
        if (hit!.pointer) expect(hit!.pointers[0].path).toBe(hit!.pointer);
      }
      const expected = new Set([...e.expect!.map((x) => x.error), ...(e.allowOthers ?? [])]);
      expect(r.findings.filter((f) => !expected.has(f.error)).map((f) => `${f.error} ${f.pointer}`)).toEqual([]);
      expect(r.valid).toBe(e.valid === true);
    });
  }
});

describe('validateFlowJson: messages that say what to do', () => {
  it('When a property is written in camelCase, then the finding names the dashed or snake_case one', () => {
    const top = validateFlowJson(text(corpus.find((x) => x.file.endsWith('camel-case-top-level.json'))!)).findings[0];
    expect(top.message).toContain('Use "routing_model"');
    const comp = validateFlowJson(text(corpus.find((x) => x.file.endsWith('camel-case-property.json'))!)).findings.find((f) => f.error === 'INVALID_PROPERTY')!;
    expect(comp.message).toContain('Use "on-click-action"');
  });

  it('When a screen id has digits, then the finding suggests one with letters only', () => {
    const f = validateFlowJson(text(corpus.find((x) => x.file.endsWith('screen_id--digits.json'))!)).findings[0];
    expect(f.message).toContain('"SCREEN_TWO"');
  });
});

describe('validateFlowJson: positions', () => {
  it('When a property is wrong deep in the text, then line and column point at its value', () => {
    const e = corpus.find((x) => x.file.endsWith('heading-too-long.json'))!;
    const src = text(e);
    const f = validateFlowJson(src).findings[0];
    const line = src.split('\n')[f.line_start - 1];
    expect(line.slice(f.column_start - 1)).toMatch(/^"h{81}"/);
    expect(f.line_end).toBe(f.line_start);
    expect(f.column_end - f.column_start + 1).toBe(83);
  });

  it('When a parsed value is validated, then positions refer to its two-space rendering', () => {
    const flow = JSON.parse(text(corpus.find((x) => x.file.endsWith('version--unknown.json'))!));
    const r = validateFlowJson(flow);
    expect(r.text).toBe(JSON.stringify(flow, null, 2));
    expect(r.findings[0]).toMatchObject({ error: 'UNSUPPORTED_VERSION', line_start: 2, column_start: 14 });
  });

  it('When the JSON is broken on line 3, then the finding says line 3', () => {
    const r = validateFlowJson('{\n  "version": "7.3",\n  "screens": [,]\n}');
    expect(r.findings[0]).toMatchObject({ error: 'INVALID_JSON', line_start: 3 });
  });

  it('When the value is not an object at all, then it is one schema finding, never an exception', () => {
    for (const v of [null, 42, 'x', [], { screens: 'no' }, { version: 7.3, screens: [null, 1, { id: 3 }] }]) {
      const r = validateFlowJson(v);
      expect(r.valid).toBe(false);
      expect(r.findings.length).toBeGreaterThan(0);
    }
  });
});
