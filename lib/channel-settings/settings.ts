/**
 * A project's channel settings: stored with their secrets sealed (lib/platform/crypto-box.ts), opened only
 * when a call to the channel or a webhook check needs them.
 */
import type { Deps } from '../deps.js';
import { ApiError } from '../platform/errors.js';
import { credentialsChanged } from '../access/credential-cache.js';
import { DEFAULT_CHANNEL_KIND } from '../channel-port/capabilities.js';
import { type Tx, execute, queryRowsNamed } from '../platform/db/tx.js';

export interface ChannelCredentials {
  phoneNumberId: string;
  wabaId: string;
  appId: string;
  accessToken: string;
}

export interface OpenChannel extends ChannelCredentials {
  projectId: string;
  /** The adapter that serves it (lib/channel-port/capabilities.ts `portOf`). */
  kind: string;
  appSecret: string;
  verifyToken: string;
  displayPhoneNumber: string | null;
}

export interface ChannelInput {
  kind?: string;
  phoneNumberId: string;
  wabaId: string;
  appId: string;
  accessToken: string;
  appSecret: string;
  verifyToken: string;
  displayPhoneNumber?: string;
}

type ChannelDeps = Pick<Deps, 'db' | 'secretBox'> & Partial<Pick<Deps, 'credentialCache' | 'clock'>>;

/** Where a channel secret is stored: its sealed value is bound to it (lib/platform/crypto-box.ts). */
export function channelSecretPlace(projectId: string, column: 'access_token' | 'app_secret' | 'verify_token'): string {
  return `channel_settings:${projectId}:${column}_enc`;
}

export async function saveChannel(deps: ChannelDeps & Partial<Pick<Deps, 'logger'>>, projectId: string, input: ChannelInput) {
  const data = {
    kind: input.kind ?? DEFAULT_CHANNEL_KIND,
    phoneNumberId: input.phoneNumberId,
    wabaId: input.wabaId,
    appId: input.appId,
    displayPhoneNumber: input.displayPhoneNumber ?? null,
    accessTokenEnc: deps.secretBox.seal(input.accessToken, channelSecretPlace(projectId, 'access_token')),
    appSecretEnc: deps.secretBox.seal(input.appSecret, channelSecretPlace(projectId, 'app_secret')),
    verifyTokenEnc: deps.secretBox.seal(input.verifyToken, channelSecretPlace(projectId, 'verify_token')),
  };
  const row = await deps.db.prisma.channelSettings.upsert({ where: { projectId }, create: { projectId, ...data }, update: data });
  // Opened channels are cached with the credentials: they hear of the change after the commit.
  await credentialsChanged(deps);
  return row;
}

/** A project's channel settings as stored (secrets sealed), for the operator's read. */
export function findChannel(deps: Pick<Deps, 'db'>, projectId: string) {
  return deps.db.prisma.channelSettings.findUnique({ where: { projectId } });
}

/** The project a phone number id is configured for, if any (one number serves one project). */
export async function projectOfNumber(deps: Pick<Deps, 'db'>, phoneNumberId: string): Promise<string | undefined> {
  return (await deps.db.prisma.channelSettings.findUnique({ where: { phoneNumberId }, select: { projectId: true } }))?.projectId;
}

export async function openChannel(deps: ChannelDeps, projectId: string): Promise<OpenChannel | undefined> {
  // This runs on every send and every channel callback: cached (operator writes invalidate it),
  // else one prepared statement. Cache ages are read on the injected clock.
  const now = (deps.clock?.now() ?? new Date()).getTime();
  const cached = deps.credentialCache?.lookup(`channel:${projectId}`, now) as OpenChannel | undefined;
  if (cached) return cached;
  const channel = await readChannel(deps, projectId);
  if (channel) deps.credentialCache?.store(`channel:${projectId}`, channel, now);
  return channel;
}

async function readChannel(deps: ChannelDeps, projectId: string): Promise<OpenChannel | undefined> {
  const [row] = await queryRowsNamed<Record<string, string>>(
    deps.db.sql,
    'channel-open',
    `SELECT kind, phone_number_id, waba_id, app_id, display_phone_number, access_token_enc, app_secret_enc, verify_token_enc
       FROM channel_settings WHERE project_id = $1`,
    projectId,
  );
  if (!row) return undefined;
  return {
    projectId,
    kind: row.kind,
    phoneNumberId: row.phone_number_id,
    wabaId: row.waba_id,
    appId: row.app_id,
    displayPhoneNumber: row.display_phone_number,
    accessToken: deps.secretBox.open(row.access_token_enc, channelSecretPlace(projectId, 'access_token')),
    appSecret: deps.secretBox.open(row.app_secret_enc, channelSecretPlace(projectId, 'app_secret')),
    verifyToken: deps.secretBox.open(row.verify_token_enc, channelSecretPlace(projectId, 'verify_token')),
  };
}

export async function requireChannel(deps: ChannelDeps, projectId: string): Promise<OpenChannel> {
  const channel = await openChannel(deps, projectId);
  if (!channel) throw new ApiError('channel_not_configured', 'This project has no WhatsApp channel configured yet; an operator sets it up.');
  return channel;
}

export function webhookUrl(publicBaseUrl: string, projectId: string): string {
  return `${publicBaseUrl}/channel/${projectId}/webhook`;
}

/** Replaces a sealed channel secret, only if it is still `from` (the start-up re-seal, lib/upkeep/secret-reseal.ts). */
export async function replaceSealedChannelSecret(
  db: Tx, projectId: string, column: 'access_token' | 'app_secret' | 'verify_token', from: string, to: string,
): Promise<number> {
  return execute(db, `UPDATE channel_settings SET ${column}_enc = $1 WHERE project_id = $2 AND ${column}_enc = $3`, to, projectId, from);
}
