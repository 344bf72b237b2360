/**
 * Deploying the development tree to production, and rolling back.
 *
 * Policy and why (anchors: Twilio's build promotion, Cloudflare's rollback, Kapso's idempotent
 * deploy by hash):
 * - A deploy builds the development tree (bundle + type check + start-up in the sandbox), then runs
 *   it once on a sample message in preview (the caller's `trial`; `force` skips it). Only a
 *   clean build whose trial passed is promoted, and exactly that artifact: the bundle, its source map and the files it
 *   was built from are written with the deployment record, the production tree is replaced and
 *   the release pointer switched, all in one transaction. A failed build changes nothing in
 *   production; it is recorded (with its diagnostics) and answered as 502 `build_failed`.
 * - A tree whose content hash equals production's is not rebuilt: the answer is the active
 *   deployment with `no_op: true`.
 * - The last 20 deployments of a project are kept (never the active one's record); a rollback
 *   promotes a kept deployment's bundle and files again, without rebuilding, as a new record
 *   with `rollback_of`.
 * - Deploys and rollbacks of one project are serialised by an advisory lock.
 * - Reads take the one handle (`Tx`: `deps.db.sql`, or the deploy lock's transaction); a deploy or
 *   a rollback takes the `Database` and names its pool only to open that transaction.
 */
import type pg from 'pg';
import type { Deps } from '../deps.js';
import type { Database } from '../platform/db/database.js';
import { inTransaction } from '../platform/db/transaction.js';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/secrets.js';
import { ensureTree, readTree, replaceProductionTree, treeHash } from '../code/store.js';
import { buildTree, ENTRY, type Diagnostic } from './build.js';
import { DEFAULT_LIMITS, StartupError } from '../sandbox/sandbox.js';
import { SandboxBusy, SandboxCrashed, sandboxSupervisor } from '../sandbox/supervisor.js';
import { readSchedules, type DeclaredSchedule } from './schedules.js';
import { lockForTransaction } from '../platform/db/locks.js';

export const KEPT_DEPLOYMENTS = 20;

export interface DeploymentView {
  id: string;
  status: 'succeeded' | 'failed';
  content_hash: string;
  message: string | null;
  created_by: string | null;
  created_at: string;
  active: boolean;
  rollback_of: string | null;
  diagnostics: Diagnostic[];
}

interface Row {
  id: string;
  status: string;
  content_hash: string;
  message: string | null;
  created_by: string | null;
  created_at: Date;
  rollback_of: string | null;
  diagnostics: Diagnostic[];
  active: boolean;
}

const COLUMNS = `d.id, d.status, d.content_hash, d.message, d.created_by, d.created_at, d.rollback_of, d.diagnostics,
  EXISTS (SELECT 1 FROM bot_releases r WHERE r.project_id = d.project_id AND r.deployment_id = d.id) AS active`;

function view(r: Row): DeploymentView {
  return {
    id: r.id,
    status: r.status as DeploymentView['status'],
    content_hash: r.content_hash,
    message: r.message,
    created_by: r.created_by,
    created_at: r.created_at.toISOString(),
    active: r.active,
    rollback_of: r.rollback_of,
    diagnostics: r.diagnostics ?? [],
  };
}

export async function listDeployments(tx: Tx, projectId: string): Promise<DeploymentView[]> {
  const rows = await queryRows<Row>(tx, `SELECT ${COLUMNS} FROM deployments d WHERE d.project_id = $1 ORDER BY d.seq DESC LIMIT ${KEPT_DEPLOYMENTS}`, projectId);
  return rows.map(view);
}

async function findDeployment(tx: Tx, projectId: string, id: string): Promise<DeploymentView | undefined> {
  const rows = await queryRows<Row>(tx, `SELECT ${COLUMNS} FROM deployments d WHERE d.project_id = $1 AND d.id = $2`, projectId, id);
  return rows[0] ? view(rows[0]) : undefined;
}

async function activeRelease(tx: Tx, projectId: string): Promise<{ deploymentId: string; contentHash: string } | undefined> {
  const rows = await queryRows<{ deployment_id: string; content_hash: string }>(tx, `SELECT deployment_id, content_hash FROM bot_releases WHERE project_id = $1`, projectId);
  const r = rows[0];
  return r ? { deploymentId: r.deployment_id, contentHash: r.content_hash } : undefined;
}

/** Keeps the newest KEPT_DEPLOYMENTS records, and always the active one. */
async function prune(tx: Tx, projectId: string): Promise<void> {
  await execute(tx,
    `DELETE FROM deployments d WHERE d.project_id = $1
       AND d.id NOT IN (SELECT id FROM deployments WHERE project_id = $1 ORDER BY seq DESC LIMIT ${KEPT_DEPLOYMENTS})
       AND NOT EXISTS (SELECT 1 FROM bot_releases r WHERE r.project_id = d.project_id AND r.deployment_id = d.id)`,
    projectId,
  );
}

/** One transaction on pg under the project's deploy lock (advisory locks are pg's). */
async function withDeployLock<T>(db: Pick<Database, 'pool'>, projectId: string, fn: (tx: pg.PoolClient & Tx) => Promise<T>): Promise<T> {
  return inTransaction(db.pool, async (tx) => {
    await lockForTransaction(tx, `deploy:${projectId}`);
    return fn(tx);
  });
}

interface Artifact {
  contentHash: string;
  bundle: string;
  sourceMap: string;
  files: Map<string, string>;
  /** The schedules the bundle declares (read at start-up). */
  schedules: Record<string, DeclaredSchedule>;
}

/** Inside the deploy lock: record, replace the production tree, switch the release, prune. */
async function promote(tx: Tx, projectId: string, a: Artifact, meta: { message: string | null; createdBy: string | null; rollbackOf: string | null }, now: Date): Promise<string> {
  const id = newId('dep', 20);
  await execute(tx,
    `INSERT INTO deployments (id, project_id, status, content_hash, bundle, source_map, files, diagnostics, message, created_by, rollback_of, created_at, schedules)
     VALUES ($1, $2, 'succeeded', $3, $4, $5, $6, '[]', $7, $8, $9, $10, $11)`,
    id, projectId, a.contentHash, a.bundle, a.sourceMap, JSON.stringify(Object.fromEntries(a.files)), meta.message, meta.createdBy, meta.rollbackOf, now, JSON.stringify(a.schedules),
  );
  await replaceProductionTree(tx, projectId, a.files, now);
  await execute(tx,
    `INSERT INTO bot_releases (project_id, deployment_id, content_hash, promoted_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (project_id) DO UPDATE SET deployment_id = EXCLUDED.deployment_id, content_hash = EXCLUDED.content_hash, promoted_at = EXCLUDED.promoted_at`,
    projectId, id, a.contentHash, now,
  );
  await prune(tx, projectId);
  return id;
}

/**
 * Runs the bundle's start-up in a throwaway sandbox; diagnostics when it fails. `declared` receives
 * what the bundle declared at start-up (its schedules: lib/deploy/schedules.ts).
 */
export async function startupCheck(bundle: string, sourceMap: string, key = 'deploy', declared?: { text?: string }): Promise<Diagnostic[]> {
  const refuse = async () => JSON.stringify({ ok: false, error: { code: 'startup', message: 'Helpers are not available while the bot starts.' } });
  try {
    // In a sandbox process: a bundle whose start-up ends its process costs that child only.
    const sandbox = await sandboxSupervisor().create(key, bundle, sourceMap, refuse, DEFAULT_LIMITS);
    if (declared) declared.text = sandbox.declared;
    sandbox.dispose();
    return [];
  } catch (e) {
    if (e instanceof SandboxBusy) {
      return [{ file: ENTRY, line: 1, column: 1, message: `The bot's start-up could not be checked now: ${e.message} Try again.`, source: 'startup' }];
    }
    if (e instanceof SandboxCrashed) {
      return [{ file: ENTRY, line: 1, column: 1, message: `The bot's start-up ended its sandbox process: ${e.message}`, source: 'startup' }];
    }
    if (!(e instanceof StartupError)) throw e;
    return [{ file: e.location?.file ?? ENTRY, line: e.location?.line ?? 1, column: e.location?.column ?? 1, message: e.message, source: 'startup' }];
  }
}

/** The shortest period a schedule may have when the caller names none (SCHEDULE_MIN_PERIOD_SECONDS). */
const MIN_PERIOD_SECONDS = 60;

/** Builds a tree completely (bundle, type check, start-up, the schedules it declares). */
export async function buildArtifact(files: Map<string, string>, opts: { minPeriodSeconds?: number; projectId?: string } = {}):
  Promise<{ ok: true; bundle: string; sourceMap: string; schedules: Record<string, DeclaredSchedule> } | { ok: false; diagnostics: Diagnostic[] }> {
  // In the project's turn, charged to it (lib/deploy/build.ts).
  const built = await buildTree(files, { projectId: opts.projectId });
  if (!built.ok) return built;
  const declared: { text?: string } = {};
  // In the project's own sandbox process: a start-up that ends it costs no other project.
  const diagnostics = await startupCheck(built.bundle, built.sourceMap, opts.projectId ?? 'deploy', declared);
  if (diagnostics.length) return { ok: false, diagnostics };
  const schedules = await readSchedules(files, declared.text, opts.minPeriodSeconds ?? MIN_PERIOD_SECONDS);
  return schedules.ok ? { ...built, schedules: schedules.schedules } : schedules;
}

export function buildFailed(diagnostics: Diagnostic[], deploymentId?: string): ApiError {
  const first = diagnostics[0];
  const where = first ? ` First: ${first.file}:${first.line}:${first.column} ${first.message}` : '';
  return new ApiError('build_failed', `The build failed with ${diagnostics.length} diagnostic(s); production is unchanged.${where}`, {
    diagnostics,
    ...(deploymentId ? { deployment_id: deploymentId } : {}),
  });
}

export interface DeployOptions {
  message?: string;
  createdBy?: string;
  /**
   * Runs the built bundle once on a sample event (lib/bot/deploy-trial.ts, which the caller
   * composes: the bot is above this room); diagnostics refuse the deploy like a failed build.
   */
  trial?: (bundle: string, sourceMap: string) => Promise<Diagnostic[]>;
  /** Promote without the trial run. */
  force?: boolean;
  /**
   * A rollback's: runs inside its promotion's transaction with the new deployment's id (the
   * console's audit row). That transaction is on pg (the deploy lock is an advisory lock).
   */
  withinPromotion?: (client: pg.PoolClient & Tx, deploymentId: string) => Promise<void>;
}

export async function deploy(deps: Pick<Deps, 'db' | 'clock'> & { config?: Pick<Deps['config'], 'scheduleMinPeriodSeconds'> }, projectId: string, opts: DeployOptions = {}): Promise<{ deployment: DeploymentView; noOp: boolean }> {
  const sql = deps.db.sql;
  await ensureTree(deps.db, projectId, deps.clock.now());
  const files = await readTree(sql, projectId, 'development');
  const contentHash = treeHash(files);
  const release = await activeRelease(sql, projectId);
  if (release?.contentHash === contentHash) {
    const active = await findDeployment(sql, projectId, release.deploymentId);
    if (active) return { deployment: active, noOp: true };
  }
  const built = await buildArtifact(files, { minPeriodSeconds: deps.config?.scheduleMinPeriodSeconds, projectId });
  const meta = { message: opts.message ?? null, createdBy: opts.createdBy ?? null, rollbackOf: null };
  // A bundle that fails its trial run (the sample message) would fail every customer: refused as a failed build.
  const refused = !built.ok ? built.diagnostics : opts.trial && !opts.force ? await opts.trial(built.bundle, built.sourceMap) : [];
  if (!built.ok || refused.length) {
    const id = newId('dep', 20);
    await execute(sql,
      `INSERT INTO deployments (id, project_id, status, content_hash, diagnostics, message, created_by, created_at) VALUES ($1, $2, 'failed', $3, $4, $5, $6, $7)`,
      id, projectId, contentHash, JSON.stringify(refused), meta.message, meta.createdBy, deps.clock.now(),
    );
    await prune(sql, projectId);
    throw buildFailed(refused, id);
  }
  return withDeployLock(deps.db, projectId, async (tx) => {
    // A concurrent deploy of the same content won the lock first: answer its record.
    const now = await activeRelease(tx, projectId);
    if (now?.contentHash === contentHash) {
      const active = await findDeployment(tx, projectId, now.deploymentId);
      if (active) return { deployment: active, noOp: true };
    }
    const id = await promote(tx, projectId, { contentHash, bundle: built.bundle, sourceMap: built.sourceMap, files, schedules: built.schedules }, meta, deps.clock.now());
    return { deployment: (await findDeployment(tx, projectId, id))!, noOp: false };
  });
}

export async function rollback(deps: Pick<Deps, 'db' | 'clock'>, projectId: string, deploymentId: string, opts: DeployOptions = {}): Promise<{ deployment: DeploymentView; noOp: boolean }> {
  return withDeployLock(deps.db, projectId, async (tx) => {
    const rows = await queryRows<{ status: string; content_hash: string; bundle: string | null; source_map: string | null; files: Record<string, string> | null; schedules: Record<string, DeclaredSchedule> | null }>(tx,
      `SELECT status, content_hash, bundle, source_map, files, schedules FROM deployments WHERE project_id = $1 AND id = $2`,
      projectId, deploymentId,
    );
    const target = rows[0];
    if (!target || target.status !== 'succeeded' || target.bundle === null || target.files === null) {
      throw new ApiError('not_found', `No succeeded deployment "${deploymentId}" is kept for this project (the last ${KEPT_DEPLOYMENTS} are).`);
    }
    const release = await activeRelease(tx, projectId);
    if (release?.deploymentId === deploymentId) return { deployment: (await findDeployment(tx, projectId, deploymentId))!, noOp: true };
    const files = new Map(Object.entries(target.files));
    const id = await promote(
      tx,
      projectId,
      { contentHash: target.content_hash, bundle: target.bundle, sourceMap: target.source_map ?? '', files, schedules: target.schedules ?? {} },
      { message: opts.message ?? null, createdBy: opts.createdBy ?? 'operator', rollbackOf: deploymentId },
      deps.clock.now(),
    );
    await opts.withinPromotion?.(tx, id);
    return { deployment: (await findDeployment(tx, projectId, id))!, noOp: false };
  });
}

/** The bundle production runs for a project, if any. */
export async function loadRelease(tx: Tx, projectId: string): Promise<{ deploymentId: string; bundle: string; sourceMap: string } | undefined> {
  const rows = await queryRows<{ id: string; bundle: string; source_map: string | null }>(tx,
    `SELECT d.id, d.bundle, d.source_map FROM bot_releases r JOIN deployments d ON d.id = r.deployment_id WHERE r.project_id = $1`,
    projectId,
  );
  const r = rows[0];
  return r ? { deploymentId: r.id, bundle: r.bundle, sourceMap: r.source_map ?? '' } : undefined;
}
