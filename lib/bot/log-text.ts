/**
 * Text a bot chose (its log lines, error messages, helper names), made fit for one log line:
 * truncated first (so a huge text costs nothing), then every control character, newlines
 * included, and the Unicode line separators written as visible escapes, so no bot text can end a
 * line and start a forged one, in the service log or in a table of bot log entries.
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

export function oneLine(text: string, max: number): string {
  const cut = text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
  return cut.replace(CONTROL, (c) => NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
