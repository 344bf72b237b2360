/**
 * Phone numbers in international form. We store the WhatsApp id form (digits only, country code
 * first) and show `+<digits>`. Separators people type (spaces, dashes, dots, parentheses) are
 * ignored; anything else, or a length outside E.164's 8 to 15 digits, is not a phone number.
 */
const SEPARATORS = /[\s\-.()]/g;

/** Digits of a valid international number, or undefined. */
export function normalizePhone(input: string): string | undefined {
  const compact = input.replace(SEPARATORS, '');
  const digits = compact.startsWith('+') ? compact.slice(1) : compact;
  return /^[1-9][0-9]{7,14}$/.test(digits) ? digits : undefined;
}

export function displayPhone(digits: string): string {
  return `+${digits}`;
}
