/** Operator API: the first dashboard owner of a project (owners invite the others from the dashboard). Rules: lib/accounts/accounts.ts. */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { grantRole, setupLink } from '../../lib/accounts/accounts.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { ApiError } from '../../lib/platform/errors.js';

type Ops = operations;

export const adminGrantDashboardRole: Handler<Ops['adminGrantDashboardRole']> = async (req, deps) => {
  try {
    const g = await grantRole(deps, req.params.projectId, req.body.email, req.body.role ?? 'owner', { resetPassword: req.body.reset_password === true });
    return {
      status: 201,
      data: {
        account: g.account,
        project_id: req.params.projectId.toLowerCase(),
        role: g.role,
        setup_url: g.setupToken ? setupLink(deps.config.publicBaseUrl, g.setupToken) : null,
        setup_expires_at: g.setupExpiresAt ? g.setupExpiresAt.toISOString() : null,
      },
    };
  } catch (e) {
    if (e instanceof DashboardRefusal) throw new ApiError('invalid_request', e.message);
    throw e;
  }
};
