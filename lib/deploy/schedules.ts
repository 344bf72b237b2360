/**
 * A deploy reads the bot's schedules: the bundle's start-up in the sandbox says what it declares
 * (`export const schedules`, as the running code sees it: lib/sandbox/sandbox.ts), and each is
 * checked (lib/deploy/schedule-rules.ts). A bad one refuses the deploy with a diagnostic at the
 * author's file and line: the declaration's `cron` or `timeZone` property (or its name) found in
 * the tree's source with the TypeScript parser; the entry point when it cannot be found (a
 * computed declaration).
 */
import type ts from 'typescript';
import { ENTRY } from './build.js';
import type { Diagnostic } from './diagnostic.js';
import { checkSchedules, type ScheduleField, type ScheduleSpec } from './schedule-rules.js';

/** A declared schedule as a deployment records it. */
export interface DeclaredSchedule extends ScheduleSpec {
  /** Where it is declared: `src/bot.ts:12`. */
  source: string | null;
}

type Where = { file: string; line: number; column: number };

/**
 * Positions of `export const schedules = { name: { cron, timeZone } }` in the tree's own files.
 * The TypeScript compiler is imported here, at the first deploy that declares schedules, not with
 * the service: it holds about 70 MB (its 9 MB source, its code and tables) that nothing else in the
 * service process uses (the type-check runs in a worker of its own).
 */
async function declarations(files: Map<string, string>): Promise<Map<string, Partial<Record<ScheduleField, Where>>>> {
  const found = new Map<string, Partial<Record<ScheduleField, Where>>>();
  for (const [file, text] of files) {
    if (!file.endsWith('.ts') || file.startsWith('src/platform/') || !/\bschedules\b/.test(text)) continue;
    const { default: ts } = await import('typescript');
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    const at = (node: ts.Node): Where => {
      const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
      return { file, line: line + 1, column: character + 1 };
    };
    const unwrap = (e: ts.Expression): ts.Expression =>
      ts.isAsExpression(e) || ts.isSatisfiesExpression(e) || ts.isParenthesizedExpression(e) ? unwrap(e.expression) : e;
    const keyOf = (p: ts.ObjectLiteralElementLike): string | undefined =>
      p.name && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) ? p.name.text : undefined;
    for (const stmt of sf.statements) {
      if (!ts.isVariableStatement(stmt) || !stmt.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) continue;
      for (const d of stmt.declarationList.declarations) {
        if (!ts.isIdentifier(d.name) || d.name.text !== 'schedules' || !d.initializer) continue;
        const obj = unwrap(d.initializer);
        if (!ts.isObjectLiteralExpression(obj)) continue;
        for (const p of obj.properties) {
          const name = keyOf(p);
          if (name === undefined) continue;
          const where: Partial<Record<ScheduleField, Where>> = { name: at(p) };
          const inner = ts.isPropertyAssignment(p) ? unwrap(p.initializer) : undefined;
          if (inner && ts.isObjectLiteralExpression(inner)) {
            for (const q of inner.properties) {
              const k = keyOf(q);
              if (k === 'cron' || k === 'timeZone') where[k] = at(ts.isPropertyAssignment(q) ? q.initializer : q);
            }
          }
          found.set(name, where);
        }
      }
    }
  }
  return found;
}

/**
 * The schedules a bundle declared at start-up (`declared`: JSON text, or undefined when it
 * declares none), checked: the schedules to record, or the diagnostics that refuse the deploy.
 */
export async function readSchedules(files: Map<string, string>, declared: string | undefined, minPeriodSeconds: number):
  Promise<{ ok: true; schedules: Record<string, DeclaredSchedule> } | { ok: false; diagnostics: Diagnostic[] }> {
  let value: unknown;
  try {
    // The scaffold's registerBot leaves `{ "schedules": … }` (src/platform/webhook.ts).
    value = declared === undefined ? undefined : (JSON.parse(declared) as { schedules?: unknown } | null)?.schedules;
  } catch {
    value = null;
  }
  const { schedules, problems } = checkSchedules(value, minPeriodSeconds);
  const places = await declarations(files);
  if (problems.length) {
    return {
      ok: false,
      diagnostics: problems.map((p) => {
        const where = places.get(p.name);
        const at = where?.[p.field] ?? where?.name ?? { file: ENTRY, line: 1, column: 1 };
        return { ...at, message: p.message, source: 'startup' as const };
      }),
    };
  }
  const out: Record<string, DeclaredSchedule> = {};
  for (const [name, spec] of schedules) {
    const at = places.get(name)?.name;
    out[name] = { ...spec, source: at ? `${at.file}:${at.line}` : null };
  }
  return { ok: true, schedules: out };
}
