/**
 * @mentions in a note (issue 68, item 2): `@ada@example.com` names a colleague by their sign-in
 * email; `@ada` by its local part when exactly one member of the project has it. The writer names
 * no one by mentioning themself. Pure: the members are the project's (team.ts listMembers).
 */

/** `@` then an email or a local part; the one before it is not a word character (not an email's own `@`). */
const MENTION = /(?<![\w.+-])@([A-Za-z0-9._%+-]+(?:@[A-Za-z0-9.-]+\.[A-Za-z]{2,})?)/g;

/** The account ids a note names, each once, in the order written. */
export function mentionedIn(body: string, members: ReadonlyArray<{ id: string; email: string }>, writerId: string): string[] {
  const byEmail = new Map(members.map((m) => [m.email.toLowerCase(), m.id]));
  const byLocal = new Map<string, string | null>();
  for (const m of members) {
    const local = m.email.toLowerCase().split('@')[0];
    byLocal.set(local, byLocal.has(local) ? null : m.id);
  }
  const out: string[] = [];
  for (const [, raw] of body.matchAll(MENTION)) {
    const token = raw.toLowerCase().replace(/[.]+$/, '');
    const id = token.includes('@') ? byEmail.get(token) : byLocal.get(token);
    if (id && id !== writerId && !out.includes(id)) out.push(id);
  }
  return out;
}
