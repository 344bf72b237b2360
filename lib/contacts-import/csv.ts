/**
 * A streaming CSV reader (RFC 4180: `,` separated, `"` quoted, `""` inside quotes, CRLF or LF,
 * newlines allowed inside quotes). It holds one record at a time, so memory does not grow with
 * the file. Each record carries the line it starts on. A record with broken quoting (a quote in
 * the middle of an unquoted field, text after a closing quote, a quote never closed) or with bytes
 * that are not UTF-8 is yielded with an `error` instead of being guessed at; the reader then
 * continues with the next line.
 */
import type { Readable } from 'node:stream';

export interface CsvRecord {
  line: number;
  fields: string[];
  error?: string;
}

/** Records longer than this (characters) are refused rather than buffered. */
export const MAX_RECORD_CHARS = 64 * 1024;

export async function* readCsv(input: Readable | AsyncIterable<Buffer>): AsyncGenerator<CsvRecord> {
  const decoder = new TextDecoder('utf-8', { fatal: false });
  let field = '';
  let fields: string[] = [];
  let inQuotes = false;
  let afterQuote = false;
  let error: string | undefined;
  let line = 1;
  let startLine = 1;
  let size = 0;
  let first = true;
  let any = false;
  // The last character of a chunk when it needs the next one to be read (a quote, a CR).
  let carry = '';

  const endRecord = (): CsvRecord | undefined => {
    fields.push(field);
    const rec: CsvRecord = { line: startLine, fields };
    if (error) rec.error = error;
    else if (fields.some((f) => f.includes('\uFFFD'))) rec.error = 'not valid UTF-8 text';
    field = '';
    fields = [];
    afterQuote = false;
    error = undefined;
    size = 0;
    any = false;
    // A blank line is not a record.
    if (!rec.error && rec.fields.length === 1 && rec.fields[0] === '') return undefined;
    return rec;
  };

  const consume = (text: string, final: boolean): CsvRecord[] => {
    const out: CsvRecord[] = [];
    for (let i = 0; i < text.length; i++) {
      const ch = text[i];
      if (!final && i === text.length - 1 && (ch === '"' || ch === '\r')) {
        carry = ch;
        break;
      }
      if (!any) {
        any = true;
        startLine = line;
      }
      if (++size > MAX_RECORD_CHARS) {
        error ??= `a record longer than ${MAX_RECORD_CHARS} characters`;
        if (field.length > 1024) field = field.slice(0, 1024);
      }
      if (inQuotes) {
        if (ch === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i++;
          } else {
            inQuotes = false;
            afterQuote = true;
          }
        } else {
          if (ch === '\n' || (ch === '\r' && text[i + 1] !== '\n')) line++;
          field += ch;
        }
      } else if (ch === ',') {
        fields.push(field);
        field = '';
        afterQuote = false;
      } else if (ch === '\n' || ch === '\r') {
        if (ch === '\r' && text[i + 1] === '\n') i++;
        line++;
        const rec = endRecord();
        if (rec) out.push(rec);
      } else if (ch === '"') {
        if (field === '' && !afterQuote) inQuotes = true;
        else error ??= 'a quote inside an unquoted field';
      } else {
        if (afterQuote) error ??= 'text after a closing quote';
        if (ch === '\u0000') error ??= 'a NUL byte (not text)';
        field += ch;
      }
    }
    return out;
  };

  for await (const chunk of input) {
    let text = decoder.decode(chunk as Buffer, { stream: true });
    if (first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
    }
    text = carry + text;
    carry = '';
    for (const r of consume(text, false)) yield r;
  }
  const tail = carry + decoder.decode();
  carry = '';
  for (const r of consume(tail, true)) yield r;
  if (inQuotes) error ??= 'a quote that is never closed';
  if (any) {
    const rec = endRecord();
    if (rec) yield rec;
  }
}
