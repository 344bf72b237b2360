/**
 * Why an import line was not imported as is: a stable code for programs (the contract's
 * `ContactImportRowCode`) beside a text for people that is true to the line. A number's text says
 * what is wrong with what was written (too few digits, a country code starting with 0, a second
 * `+`, letters), and asks for `default_country` only when the number has none and could be one.
 */
export type ImportRowCode =
  | 'malformed_csv'
  | 'invalid_encoding'
  | 'line_too_long'
  | 'missing_number'
  | 'missing_country_code'
  | 'invalid_number'
  | 'invalid_opted_in'
  | 'name_too_long'
  | 'tag_too_long'
  | 'duplicate';

export interface RowReason {
  code: ImportRowCode;
  reason: string;
}

/** A record the CSV reader refused (csv.ts `error`). */
export function csvReason(error: string): RowReason {
  if (/UTF-8|NUL byte/.test(error)) return { code: 'invalid_encoding', reason: `not text: ${error}` };
  if (/longer than/.test(error)) return { code: 'line_too_long', reason: `not valid CSV: ${error}` };
  return { code: 'malformed_csv', reason: `not valid CSV: ${error}` };
}

const SEPARATORS = /[\s\-.()/]/g;

/**
 * E.164 digits of a number as written (`+`, `00`, or `defaultCountry` for a national number, its
 * leading zeros dropped), or why it is not one.
 */
export function classifyNumber(raw: string, defaultCountry: string | undefined): { phone: string } | RowReason {
  const shown = `"${raw.trim().slice(0, 40)}"`;
  const compact = raw.trim().replace(SEPARATORS, '');
  const bad = (reason: string): RowReason => ({ code: 'invalid_number', reason: `${shown} is not a phone number: ${reason}` });
  if (/^\+{2,}/.test(compact)) return bad('more than one + before the digits');
  const body = compact.startsWith('+') ? compact.slice(1) : compact;
  if (body === '') return bad('no digits');
  if (/[^0-9]/.test(body)) {
    return bad(body.includes('+') ? 'a + inside the number' : 'it has characters other than digits, spaces, dashes, dots, slashes and brackets');
  }
  let digits: string;
  let international = true;
  if (compact.startsWith('+')) digits = body;
  else if (body.startsWith('00')) digits = body.slice(2);
  else if (defaultCountry) {
    digits = defaultCountry + body.replace(/^0+/, '');
    international = false;
  } else {
    // Without + (or 00) the country is unknown: never guessed.
    if (body.replace(/^0+/, '').length >= 4 && body.length <= 15) {
      return { code: 'missing_country_code', reason: `${shown} has no country code: write it with + (such as +1 415 555 0101) or give default_country` };
    }
    return bad(`${body.length} digits and no country code (with a country code a number has 8 to 15 digits)`);
  }
  if (international && digits.startsWith('0')) return bad('a country calling code never starts with 0');
  if (digits.length < 8) return bad(`${digits.length} digits${international ? '' : ` with country code ${defaultCountry}`}; a number with its country code has 8 to 15`);
  if (digits.length > 15) return bad(`${digits.length} digits${international ? '' : ` with country code ${defaultCountry}`}; a number with its country code has at most 15`);
  return { phone: digits };
}
