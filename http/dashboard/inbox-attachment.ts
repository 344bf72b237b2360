/**
 * A reply with an attachment from the inbox (issue 68, item 2): an owner or admin sends a photo or
 * a document, with an optional caption. The file goes through the API's own media upload
 * (lib/media/assets.ts createMediaAsset: WhatsApp's types and sizes, checked by the file's bytes,
 * uploaded to the channel) and is sent by its slug through the API's one send path (the window,
 * quota, consent), under the form's one-time token: one message per form.
 *
 * A multipart form, streamed before the form parser (as the files page's upload): this handler
 * reads the session and checks the CSRF field itself, before any of the file is kept.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { csrfMatches } from '../../lib/accounts/csrf.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { resolveSession } from '../../lib/accounts/sessions.js';
import { ApiError } from '../../lib/platform/errors.js';
import { createMediaAsset } from '../../lib/media/assets.js';
import { detectType, sniffCeiling } from '../../lib/media/verify.js';
import { kindOf, MEDIA_MAX_BYTES } from '../../lib/media/types.js';
import { fileTooLarge } from '../../lib/media/errors.js';
import { LimitExceeded, TempFileSink } from '../../lib/media/temp-file.js';
import { conversationDetail } from '../../lib/dashboard/customer-reads.js';
import { sendReply } from '../../lib/dashboard/conversation-actions.js';
import { cookie, SESSION_COOKIE } from './request.js';
import { projectContext } from './context.js';
import { projectPath } from './layout.js';
import { changeOnce } from './console-kit.js';
import { FORM_OVERHEAD_BYTES, streamUpload } from './file-pages.js';

/** Longest caption (WhatsApp's for a media message). */
export const MAX_CAPTION_CHARS = 1024;
/** What a person attaches from the inbox. */
const ATTACHABLE = new Set(['image', 'document']);

const REFUSED_FORM = 'This form could not be verified (its security token is missing or out of date). Reload the page and try again; nothing was sent.';

/** The file's part, kept in a temporary file within WhatsApp's ceiling for what its first bytes show. */
async function keep(deps: AppDeps, file: NodeJS.ReadableStream): Promise<TempFileSink> {
  const sink = await TempFileSink.create(MEDIA_MAX_BYTES, 'ceiling', async (head, s) => {
    const ceiling = await sniffCeiling(head);
    if (ceiling !== undefined) s.setLimit(ceiling, 'ceiling');
  }, deps.config.uploadTmpDir);
  try {
    for await (const chunk of file) await sink.write(chunk as Buffer);
    await sink.finish();
    return sink;
  } catch (e) {
    await sink.remove();
    throw e instanceof LimitExceeded ? fileTooLarge(e.limit, 'an attachment') : e;
  }
}

export const submitAttachment = (deps: AppDeps) => async (req: Request, res: Response, render: (error: string, status: number) => Promise<void>) => {
  try {
    req.dashboardSession = (await resolveSession(deps, cookie(req, SESSION_COOKIE))) ?? undefined;
    if (!req.dashboardSession) throw new DashboardRefusal(401, 'Your session has ended. Sign in again; nothing was sent.');
    const { actor, project } = await projectContext(deps, req, 'conversations', ['owner', 'admin'], 'reply to customers');
    if (project.status !== 'active') throw new DashboardRefusal(409, `This project is ${project.status}: nothing can be sent.`);
    if (!req.is('multipart/form-data')) throw new DashboardRefusal(400, 'Send the file with the page’s attachment form (multipart/form-data); nothing was sent.');
    const session = req.dashboardSession;
    let sent = false;
    const fields = await streamUpload(req, MEDIA_MAX_BYTES + FORM_OVERHEAD_BYTES, async (form, file, filename) => {
      if (!csrfMatches(session, form._csrf)) throw new DashboardRefusal(403, REFUSED_FORM);
      const caption = (form.caption ?? '').trim();
      if ([...caption].length > MAX_CAPTION_CHARS) throw new DashboardRefusal(400, `A caption has at most ${MAX_CAPTION_CHARS} characters; nothing was sent.`);
      req.body = { ...form };
      const sink = await keep(deps, file);
      let consumed = false;
      try {
        // Told by the bytes, as the media upload tells them: only a photo or a document is attached here.
        const kind = kindOf((await detectType(sink)) ?? '');
        if (!kind || !ATTACHABLE.has(kind)) {
          throw new DashboardRefusal(400, `Attach a photo (JPEG or PNG, up to 5 MB) or a document (PDF, Office, text, up to 100 MB); ${filename || 'this file'} is neither. Nothing was sent.`);
        }
        await changeOnce(deps, req, res, project.id, async () => {
          const d = await conversationDetail(deps, project.id, String(req.params.conversationId));
          consumed = true;
          const media = await createMediaAsset(deps, { id: project.id, name: project.name, status: 'active' }, { body: { ...(filename ? { filename } : {}) }, file: sink, multipart: false }, undefined);
          const reply = { kind: 'media' as const, type: kind as 'image' | 'document', slug: media.slug, ...(filename ? { filename } : {}), ...(caption ? { caption } : {}) };
          await sendReply(deps, actor, { id: project.id, name: project.name, status: 'active' }, { id: d.conversation.id, contact: d.contact, group: d.conversation.group ?? null }, reply, `snd_dsh${form._once ?? ''}`);
          return projectPath(project.id, `/conversations/${d.conversation.id}?done=attachment_sent`);
        });
      } finally {
        // createMediaAsset consumes (and removes) the file; one not handed to it is removed here.
        if (!consumed) await sink.remove();
      }
      sent = true;
    });
    if (!sent) {
      if (!csrfMatches(session, fields._csrf)) throw new DashboardRefusal(403, REFUSED_FORM);
      throw new DashboardRefusal(400, 'Choose a photo or a document to attach; nothing was sent.');
    }
  } catch (e) {
    if (!req.readableEnded) {
      // Refused before the whole body was read: the answer goes out and the connection closes after it.
      res.setHeader('Connection', 'close');
      req.resume();
    }
    if (res.headersSent) return;
    // The reason on the conversation's page (a wrong type, too large, the window, a refused role);
    // without a session, or for anything unexpected, the error page.
    if (!req.dashboardSession) throw e;
    if (e instanceof DashboardRefusal && e.status !== 401) return render(e.message, e.status);
    if (e instanceof ApiError && e.status < 500) return render(`Not sent: ${e.message} (${e.code})`, e.status);
    throw e;
  }
};
