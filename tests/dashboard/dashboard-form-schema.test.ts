/**
 * The dashboard's forms are checked from their declared fields (http/dashboard/form-schema.ts):
 * the person is shown the message of the first rule the form breaks, and the values come back
 * trimmed, an empty field as absent.
 */
import { describe, expect, it } from '@jest/globals';
import type { Request } from 'express';
import { checkForm, readForm, type FormSchema } from '../../http/dashboard/form-schema.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';

const posted = (body: Record<string, unknown>) => ({ body }) as unknown as Request;

const NOTE = {
  note: { trim: true, required: 'Write the note first.', maxChars: { max: 5, message: 'At most 5 characters.' } },
  to: { oneOf: { values: ['human', 'bot'], message: 'Say who answers.' } },
  from: { trim: true, pattern: { re: /^[0-9]{8,15}$/, message: 'The number is 8 to 15 digits.' } },
} satisfies FormSchema;

describe('a form checked from its schema', () => {
  it('When the fields are good, then the values come back trimmed, an empty optional field absent', () => {
    expect(checkForm(posted({ note: '  hi ', to: 'bot', from: '' }), NOTE)).toEqual({ values: { note: 'hi', to: 'bot', from: undefined } });
  });

  it('When a field breaks a rule, then its message is the problem, the first one broken in the order the fields are declared', () => {
    expect(checkForm(posted({ note: '   ' }), NOTE).problem).toBe('Write the note first.');
    expect(checkForm(posted({ note: '😀😀😀😀😀' }), NOTE).problem).toBeUndefined(); // characters, not UTF-16 units
    expect(checkForm(posted({ note: 'abcdef', to: 'nobody' }), NOTE).problem).toBe('At most 5 characters.');
    expect(checkForm(posted({ note: 'ok', to: 'nobody' }), NOTE).problem).toBe('Say who answers.');
    expect(checkForm(posted({ note: 'ok', from: '12ab' }), NOTE).problem).toBe('The number is 8 to 15 digits.');
    expect(checkForm(posted({ note: ['a', 'b'] }), NOTE).problem).toBe('Write the note first.'); // a repeated field is not a value
  });

  it('When readForm meets a broken rule, then it refuses with 400 and the message', () => {
    expect(() => readForm(posted({}), NOTE)).toThrow(new DashboardRefusal(400, 'Write the note first.'));
  });
});
