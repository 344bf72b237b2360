/**
 * The bot's project files (lib/project-files/store.ts): `files.get` reads one, `files.media` turns
 * one into a media asset the bot sends by slug. Both answer errors as values (`{ ok: false, error }`),
 * never throwing, as `send` and `http.fetch` do. Files are the project's own: another project's
 * name is `not_found`.
 */
import { ApiError } from '../platform/errors.js';
import { projectFileAsMedia, readProjectFileForBot } from '../project-files/store.js';
import { ok, type Answer, type BotDeps, type Invocation } from './host-types.js';

export async function runFilesGet(deps: BotDeps, inv: Invocation, args: { name: string }): Promise<Answer> {
  return ok(await readProjectFileForBot(deps, inv.projectId, args.name, deps.config.botFileReadMaxBytes));
}

export async function runFilesMedia(deps: BotDeps, inv: Invocation, args: { name: string }): Promise<Answer> {
  try {
    const media = await projectFileAsMedia(deps, inv.projectId, args.name);
    return ok({ ok: true, slug: media.slug, kind: media.kind });
  } catch (e) {
    if (e instanceof ApiError) return ok({ ok: false, error: { code: e.code, message: e.message } });
    throw e;
  }
}
