/**
 * `npm run generate` (and `generate:check`, with `--check`): what follows from the bot's host API
 * table (lib/bot/host-api.ts), never kept by hand:
 * - scaffold/src/platform/generated/host-api.ts: the TypeScript types of every operation's
 *   arguments and result, which the scaffold's helpers (src/platform/runtime/*) call `hostCall`
 *   with, so a helper that drifts from the table fails the type check of every deploy and of
 *   tests/bot/host-api.test.ts;
 * - the `x-bot-helpers` section of runtime-openapi.yaml (fenced by BEGIN/END comments), the
 *   runtime contract's description of the helpers.
 * With `--check` nothing is written: exit 1 names each stale file.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { putGenerated } from './generated-file.js';
import { HOST_API, type HostOperation, type JsonSchema } from '../lib/bot/host-api.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const TYPES_FILE = 'scaffold/src/platform/generated/host-api.ts';
export const CONTRACT_FILE = 'runtime-openapi.yaml';
const BEGIN = '# BEGIN x-bot-helpers: generated from lib/bot/host-api.ts by `npm run generate`; do not edit.';
const END = '# END x-bot-helpers';

const operations = () => Object.entries(HOST_API as Record<string, HostOperation>);

function literal(v: unknown): string {
  return JSON.stringify(v).replace(/"/g, "'");
}

function doc(lines: string[], indent: string): string {
  const text = lines.filter(Boolean).join('\n').replace(/\*\//g, '*\\/');
  if (!text) return '';
  const body = text.split('\n');
  return body.length === 1 ? `${indent}/** ${body[0]} */\n` : `${indent}/**\n${body.map((l) => `${indent} * ${l}`).join('\n')}\n${indent} */\n`;
}

/** A TypeScript type for the schema; `imports` collects the scaffold types it names. */
export function tsType(s: JsonSchema, imports: Set<string>, indent = ''): string {
  if (s['x-ts-type']) {
    imports.add(s['x-ts-type']);
    return s['x-ts-type'];
  }
  if (s.const !== undefined) return literal(s.const);
  if (s.enum) return s.enum.map(literal).join(' | ');
  if (s.oneOf) return s.oneOf.map((o) => tsType(o, imports, indent)).join(' | ');
  if (Array.isArray(s.type)) return s.type.map((t) => tsType({ ...s, type: t }, imports, indent)).join(' | ');
  switch (s.type) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return `Array<${s.items ? tsType(s.items, imports, indent) : 'unknown'}>`;
    case 'object': {
      const props = Object.entries(s.properties ?? {});
      const extra = s.additionalProperties;
      const extraType = extra === false ? undefined : typeof extra === 'object' ? tsType(extra, imports, indent) : 'unknown';
      if (props.length === 0) return `Record<string, ${extraType ?? 'never'}>`;
      const inner = `${indent}  `;
      const lines = props.map(([name, p]) => {
        const optional = s.required?.includes(name) ? '' : '?';
        const key = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : literal(name);
        return `${doc([p.description ?? ''], inner)}${inner}${key}${optional}: ${tsType(p, imports, inner)};`;
      });
      if (extraType) lines.push(`${inner}[key: string]: ${extraType === 'unknown' ? 'unknown' : `${extraType} | undefined`};`);
      return `{\n${lines.join('\n')}\n${indent}}`;
    }
    default:
      return 'unknown';
  }
}

export function typesSource(): string {
  const imports = new Set<string>();
  const entries = operations().map(([name, op]) => {
    const args = tsType(op.args, imports, '    ');
    const result = tsType(op.result, imports, '    ');
    return `${doc([op.summary, '', `Limits: ${op.limits}`, `Preview: ${op.previewNote}`], '  ')}  ${literal(name)}: {\n    args: ${args};\n    result: ${result};\n  };`;
  });
  const names = [...imports].sort();
  return `/**
 * The bot's host API: every operation the service performs for the bot, with the types of its
 * arguments and result. Generated from lib/bot/host-api.ts by scripts/generate-host-api.ts
 * (\`npm run generate\`): do not edit (the platform replaces it).
 */
${names.length ? `import type { ${names.join(', ')} } from '../runtime/types.js';\n\n` : ''}export interface HostOperations {
${entries.join('\n')}
}

export type HostOpName = keyof HostOperations;
export type HostArgs<K extends HostOpName> = HostOperations[K]['args'];
export type HostResult<K extends HostOpName> = HostOperations[K]['result'];
`;
}

/** The `x-bot-helpers` value: per operation, what the contract states of it. */
export function contractSection(): Record<string, unknown> {
  return Object.fromEntries(operations().map(([name, op]) => [name, {
    summary: op.summary,
    limits: op.limits,
    preview: op.preview,
    'preview-note': op.previewNote,
    'max-argument-chars': op.maxArgs,
    'max-answer-chars': op.maxResult,
    'arguments-checked-by': op.validate,
    arguments: op.args,
    result: op.result,
  }]));
}

function sectionText(): string {
  const body = YAML.stringify({ 'x-bot-helpers': contractSection() }, { lineWidth: 0, aliasDuplicateObjects: false });
  return `${BEGIN}\n# The helpers a deployed bot calls through the sandbox (not HTTP operations): src/platform/runtime/*\n# of a project's tree wraps them. Each answer is \`{ ok: true, value }\` (the result below) or\n# \`{ ok: false, error: { code, message } }\`, which the helper throws as a HelperError.\n${body}${END}\n`;
}

/** runtime-openapi.yaml with its generated section replaced (appended when absent). */
export function contractSource(current: string): string {
  const start = current.indexOf(BEGIN);
  const end = current.indexOf(END);
  if (start === -1 || end === -1) return `${current.replace(/\n*$/, '\n')}${sectionText()}`;
  return `${current.slice(0, start)}${sectionText()}${current.slice(end + END.length).replace(/^\n/, '')}`;
}

function main(): number {
  const check = process.argv.includes('--check');
  const contractPath = path.join(root, CONTRACT_FILE);
  const wanted: Array<[string, string]> = [
    [TYPES_FILE, typesSource()],
    [CONTRACT_FILE, contractSource(readFileSync(contractPath, 'utf8'))],
  ];
  const stale = wanted.filter(([file, content]) => !putGenerated(root, file, content, 'lib/bot/host-api.ts', check)).length;
  return stale === 0 ? 0 : 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exit(main());
