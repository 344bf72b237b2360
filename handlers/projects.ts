/** Projects: what the credential reaches. Works while a project is paused (see x-project-scoped). */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';

export const listProjects: Handler<operations['listProjects']> = async (req) => {
  const { grants } = req.http.credential!;
  return {
    data: {
      projects: grants.map((g) => ({
        id: g.project.id,
        name: g.project.name,
        scopes: g.scopes as any,
        is_default: g.isDefault,
        status: g.project.status,
      })),
    },
  };
};
