/** Operator API: a project's stored files. The rules are in lib/project-files/store.ts. */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { findProject } from './projects.js';
import { deleteProjectFile, listProjectFiles, openProjectFile, saveProjectFile } from '../../lib/project-files/store.js';
import { OPERATOR_ACTOR } from '../../lib/accounts/audit.js';

type Ops = operations;

export const adminListProjectFiles: Handler<Ops['adminListProjectFiles']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: await listProjectFiles(deps, project.id) };
};

export const adminUploadProjectFile: Handler<Ops['adminUploadProjectFile']> = async (req, deps) => {
  const body = req.http;
  try {
    const project = await findProject(deps, req.params.projectId);
    const { file, created } = await saveProjectFile(deps, OPERATOR_ACTOR, project.id, req.params.name, body);
    return { status: created ? 201 : 200, data: { file } };
  } catch (e) {
    // Refused before the whole body was read: the rest is discarded and the connection closed
    // after the answer, so the client reads the refusal instead of a reset.
    if (!body.readableEnded) {
      body.res?.setHeader('Connection', 'close');
      body.resume();
    }
    throw e;
  }
};

export const adminDownloadProjectFile: Handler<Ops['adminDownloadProjectFile']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  const { file, stream } = await openProjectFile(deps, project.id, req.params.name);
  return {
    stream,
    headers: {
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(file.size),
      'Content-Disposition': `attachment; filename="${file.name}"`,
      'X-Content-Type-Options': 'nosniff',
    },
  };
};

export const adminDeleteProjectFile: Handler<Ops['adminDeleteProjectFile']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: { file: await deleteProjectFile(deps, OPERATOR_ACTOR, project.id, req.params.name) } };
};
