/**
 * CSRF: the synchronizer-token pattern. Each session has its own random token (made with the
 * session, stored beside it); every form of the session carries it in `_csrf`, and a POST whose
 * token is missing or not this session's is refused before it changes anything. SameSite=Strict
 * cookies already keep other sites' forms from carrying the session; the token also covers
 * browsers and proxies that do not honour SameSite.
 */
import { safeEqual } from '../platform/secrets.js';
import type { ActiveSession } from './sessions.js';

/** The form's token must be this session's, compared in constant time. */
export function csrfMatches(session: ActiveSession, presented: unknown): boolean {
  return typeof presented === 'string' && presented.length > 0 && safeEqual(presented, session.csrfToken);
}
