/**
 * A person's answer to an agent's authorization request, on the dashboard's consent page. What the
 * page offers: each project where the person is an owner or admin, with the whole scope catalogue
 * that role may grant (scopesGrantableBy), in groups (read, write, send, manage): the scopes the
 * client asked for preselected (the reads when it named none), the rest opt-in, so a first
 * connection can be granted sending; a member cannot grant. The token carries what was ticked. When this client already
 * holds a grant of this person (an earlier consent; a step-up asks again), the page shows it: each
 * project it reaches ticked, with the scopes it holds there ticked and marked as granted earlier, so
 * the person keeps them or unticks to drop them; a project left unticked is detached. Approving is checked again
 * on the server (the request still unanswered, each project one the person manages, each scope one
 * that was offered, at least one project), then in one transaction: the request is answered (once:
 * `… WHERE answered_at IS NULL`, so the same form posted twice stores nothing the second time), the
 * connection of this client and person is made or extended, an audit row is written per project,
 * and a single-use code is issued. The browser then goes back to the redirect URI stored with the
 * request, never anywhere else.
 */
import type { Deps } from '../deps.js';
import { credentialsChanged } from '../access/credential-cache.js';
import { attachProjectOn, connectionForClientOn, detachProjectOn, grantsOfClient, scopesOfConnection } from '../access/connections.js';
import { recordAudit, type Actor } from '../accounts/audit.js';
import { canManage, projectsOf, type Role } from '../accounts/roles.js';
import { DashboardRefusal } from '../accounts/refusal.js';
import { newId } from '../platform/secrets.js';
import * as store from './store.js';
import { isMetadataClientId } from './client-metadata.js';
import { LIMITS, SCOPES_SUPPORTED, appScheme, isReadScope, redirectOrigin, returnHost, scopeList } from './rules.js';
import { inPrismaTransaction } from '../platform/db/transaction.js';

type ConsentDeps = Pick<Deps, 'db' | 'clock' | 'logger'> & Partial<Pick<Deps, 'credentialCache'>>;

export interface ConsentView {
  requestId: string;
  /** `documentHost`: the host that publishes the client's metadata document, when its id is that document's URL. */
  client: { id: string; name: string; documentHost?: string };
  /** The host the browser returns to. */
  returnHost: string;
  /** The redirect URI's origin, or `scheme:` for an app's private-use scheme (the page's form may lead there). */
  returnOrigin?: string;
  /** The private-use scheme the browser hands the answer to (`cursor`), when the redirect URI has one. */
  returnApp?: string;
  /** The scopes the client asked for (the `scope` of its request). */
  asked: string[];
  /** Per project: `offered`, the catalogue the person's role may grant there; `preselected`, those ticked at first. */
  projects: Array<{ id: string; name: string; role: Role; canGrant: boolean; earlier?: string[]; offered: string[]; preselected: string[] }>;
}

export interface ConsentChoice {
  /** The projects ticked. */
  projects: string[];
  /** Per project, the scopes ticked. */
  scopes: Record<string, string[]>;
  /** The default project (a read naming no project acts on it). */
  defaultProject?: string;
}

const UNKNOWN = 'This authorization request is unknown. Start again from the application.';
const ANSWERED = 'This authorization request was already answered (a form sent twice?). Nothing more was stored; start again from the application if you need to.';
const EXPIRED = `This authorization request has expired (the consent page is valid for ${LIMITS.requestSeconds / 60} minutes). Nothing was stored; start again from the application.`;

/**
 * The scopes a role may grant an agent on a project: an owner or admin every scope of the catalogue,
 * a member none (a member only looks). The consent page offers these and nothing else, and an answer
 * naming any other is refused.
 */
export function scopesGrantableBy(role: Role): string[] {
  return canManage(role) ? [...SCOPES_SUPPORTED] : [];
}

/** Ticked at first: what the client asked for (the reads of the catalogue when it asked for nothing), and what it holds already. */
function preselectedOf(request: store.RequestRow, offered: string[], earlier: string[] | undefined): string[] {
  const asked = request.scopes.length ? request.scopes : SCOPES_SUPPORTED.filter(isReadScope);
  return offered.filter((s) => asked.includes(s) || earlier?.includes(s) === true);
}

/** The request, still open: 404 unknown, 409 answered, 400 expired. */
async function openRequest(deps: ConsentDeps, requestId: string): Promise<store.RequestRow> {
  const request = await store.findRequest(deps.db, requestId);
  if (!request) throw new DashboardRefusal(404, UNKNOWN);
  if (request.answeredAt) throw new DashboardRefusal(409, ANSWERED);
  if (request.expiresAt <= deps.clock.now()) throw new DashboardRefusal(400, EXPIRED);
  return request;
}

/** Whether a request id names a stored request (the page before sign-in says nothing more). */
export async function consentExists(deps: Pick<Deps, 'db'>, requestId: string): Promise<boolean> {
  return (await store.findRequest(deps.db, requestId)) !== null;
}


export async function consentView(deps: ConsentDeps, accountId: string, requestId: string): Promise<ConsentView> {
  const request = await openRequest(deps, requestId);
  const earlier = await grantsOfClient(deps, request.client.id, accountId);
  const projects = (await projectsOf(deps, accountId)).map(({ role, project }) => {
    const offered = scopesGrantableBy(role);
    return {
      id: project.id,
      name: project.name,
      role,
      canGrant: canManage(role),
      ...(earlier.has(project.id) ? { earlier: earlier.get(project.id) } : {}),
      offered,
      preselected: preselectedOf(request, offered, earlier.get(project.id)),
    };
  });
  return {
    requestId: request.id,
    client: { id: request.client.id, name: request.client.name, ...(documentHostOf(request.client.id) ? { documentHost: documentHostOf(request.client.id) } : {}) },
    returnHost: returnHost(request.redirectUri),
    returnOrigin: redirectOrigin(request.redirectUri),
    ...(appScheme(request.redirectUri) ? { returnApp: appScheme(request.redirectUri) } : {}),
    asked: request.scopes,
    projects,
  };
}

/** The host of a client_id that is its metadata document's URL (lib/oauth/client-metadata.ts). */
function documentHostOf(clientId: string): string | undefined {
  if (!isMetadataClientId(clientId)) return undefined;
  try {
    return new URL(clientId).host;
  } catch {
    return undefined;
  }
}

/** The client's redirect URI with the answer's parameters (the stored URI only). */
function answerUrl(request: store.RequestRow, params: Record<string, string>): string {
  const url = new URL(request.redirectUri);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  if (request.state !== null) url.searchParams.set('state', request.state);
  return url.href;
}

/** Approves: checks the choice, then grants in one transaction; returns where the browser goes (with `code` and `state`). */
export async function approveConsent(deps: ConsentDeps, actor: Actor & { accountId: string }, requestId: string, choice: ConsentChoice): Promise<string> {
  const request = await openRequest(deps, requestId);
  const chosen = [...new Set(choice.projects.map((p) => p.trim().toLowerCase()).filter((p) => p !== ''))];
  if (chosen.length === 0) throw new DashboardRefusal(400, 'Choose at least one project to connect, or deny. Nothing was stored.');
  if (chosen.length > 100) throw new DashboardRefusal(400, 'Too many projects in one consent. Nothing was stored.');

  const roles = new Map((await projectsOf(deps, actor.accountId)).map(({ role, project }) => [project.id, role]));
  for (const p of chosen) {
    const role = roles.get(p);
    if (!role || !canManage(role)) {
      throw new DashboardRefusal(403, `Only an owner or admin of a project can connect an agent to it; your role in "${p.slice(0, 60)}" is ${role ?? 'none'}. Nothing was stored.`);
    }
  }
  const earlier = await grantsOfClient(deps, request.client.id, actor.accountId);
  const grants = chosen.map((projectId) => {
    const scopes = scopeList(choice.scopes[projectId] ?? []);
    if (scopes.length === 0) throw new DashboardRefusal(400, `Choose at least one scope for "${projectId}", or leave it unticked. Nothing was stored.`);
    // The form is the person's, but not to be trusted: only scopes the role may grant (the page offers no others).
    const offered = scopesGrantableBy(roles.get(projectId)!);
    const notOffered = scopes.filter((s) => !offered.includes(s));
    if (notOffered.length) throw new DashboardRefusal(400, `The scope ${notOffered[0].slice(0, 60)} is not one you may grant on "${projectId.slice(0, 60)}". Nothing was stored.`);
    return { projectId, scopes };
  });
  // Granted earlier, left unticked now, on a project the person still manages: dropped.
  const dropped = [...earlier.keys()].filter((p) => !chosen.includes(p) && canManage(roles.get(p) ?? 'member'));
  const defaultProject = choice.defaultProject?.trim().toLowerCase() || chosen[0];
  if (!chosen.includes(defaultProject)) throw new DashboardRefusal(400, 'The default project must be one of the projects you connect. Nothing was stored.');

  const now = deps.clock.now();
  const client = request.client;
  const code = await inPrismaTransaction(deps.db.prisma, async (tx) => {
    if (!(await store.answerRequestOn(tx, request.id, actor.accountId, now))) throw new DashboardRefusal(409, ANSWERED);
    const connection = await connectionForClientOn(tx, { clientId: client.id, accountId: actor.accountId, name: client.name || client.id, now });
    // The default last: attaching it with is_default moves the default there.
    for (const g of [...grants.filter((g) => g.projectId !== defaultProject), ...grants.filter((g) => g.projectId === defaultProject)]) {
      const isDefault = g.projectId === defaultProject;
      await attachProjectOn(tx, connection.id, g.projectId, { scopes: g.scopes, ...(isDefault ? { isDefault: true } : {}) });
      await recordAudit(tx, now, actor, {
        projectId: g.projectId,
        action: 'agent.grant',
        subject: connection.id,
        ...(earlier.has(g.projectId) ? { before: { client_id: client.id, scopes: earlier.get(g.projectId) } } : {}),
        after: { client_id: client.id, client_name: client.name, scopes: g.scopes, is_default: isDefault, redirect_host: returnHost(request.redirectUri) },
      });
    }
    for (const projectId of dropped) {
      if (!(await detachProjectOn(tx, connection.id, projectId))) continue;
      await recordAudit(tx, now, actor, {
        projectId,
        action: 'agent.disconnect',
        subject: connection.id,
        before: { client_id: client.id, client_name: client.name, scopes: earlier.get(projectId) },
      });
    }
    return store.createCodeOn(tx, {
      clientId: client.id,
      connectionId: connection.id,
      grantId: newId('grt', 16),
      codeChallenge: request.codeChallenge,
      redirectUri: request.redirectUri,
      resource: request.resource,
      scopes: await scopesOfConnection(tx, connection.id),
      now,
      ttlSeconds: LIMITS.codeSeconds,
    });
  });
  await credentialsChanged(deps);
  deps.logger.info('oauth: consent approved', { client_id: client.id, account_id: actor.accountId, projects: chosen, dropped });
  return answerUrl(request, { code });
}

/** Denies: the request is answered (once) and the client hears `access_denied`. */
export async function denyConsent(deps: ConsentDeps, accountId: string, requestId: string): Promise<string> {
  const request = await openRequest(deps, requestId);
  const answered = await inPrismaTransaction(deps.db.prisma, (tx) => store.answerRequestOn(tx, request.id, accountId, deps.clock.now()));
  if (!answered) throw new DashboardRefusal(409, ANSWERED);
  return answerUrl(request, { error: 'access_denied', error_description: 'The person denied the request.' });
}
