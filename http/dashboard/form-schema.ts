/**
 * A form's fields, declared once (a page's route names them) and checked by one function instead
 * of by hand: each field says whether it is trimmed, required, its longest length (in characters,
 * as the contract counts them), the values it may take or the pattern it follows, each with the
 * message the person is shown when the form breaks it.
 */
import type { Request } from 'express';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { field } from './request.js';

export interface FieldRule {
  /** Surrounding white space is dropped before the checks. */
  trim?: boolean;
  /** Absent or empty is refused with this message. */
  required?: string;
  maxChars?: { max: number; message: string };
  oneOf?: { values: readonly string[]; message: string };
  /** Checked on a value given (an empty optional field is absent). */
  pattern?: { re: RegExp; message: string };
}

export type FormSchema = Record<string, FieldRule>;

/** A required field's value is there once the form passed; another may be absent. */
export type FormValues<S extends FormSchema> = { [K in keyof S]: S[K] extends { required: string } ? string : string | undefined };

type RawValues<S extends FormSchema> = { [K in keyof S]: string | undefined };

/** The form's values by the schema (empty: undefined), and the message of the first rule broken, if any. */
export function checkForm<S extends FormSchema>(req: Request, schema: S): { values: RawValues<S>; problem?: string } {
  const values = {} as Record<string, string | undefined>;
  let problem: string | undefined;
  for (const [name, rule] of Object.entries(schema)) {
    let v = field(req, name);
    if (v !== undefined && rule.trim) v = v.trim();
    if (v === '') v = undefined;
    values[name] = v;
    if (problem) continue;
    if (v === undefined) {
      if (rule.required) problem = rule.required;
      continue;
    }
    if (rule.maxChars && [...v].length > rule.maxChars.max) problem = rule.maxChars.message;
    else if (rule.oneOf && !rule.oneOf.values.includes(v)) problem = rule.oneOf.message;
    else if (rule.pattern && !rule.pattern.re.test(v)) problem = rule.pattern.message;
  }
  return problem ? { values: values as RawValues<S>, problem } : { values: values as RawValues<S> };
}

/** The form's values, or a 400 refusal with the message of the first rule broken (the error page shows it). */
export function readForm<S extends FormSchema>(req: Request, schema: S): FormValues<S> {
  const { values, problem } = checkForm(req, schema);
  if (problem) throw new DashboardRefusal(400, problem);
  return values as FormValues<S>;
}
