/**
 * The only writer of the OAuth tables: registered clients (oauth_clients), authorization requests
 * waiting for consent (oauth_requests), authorization codes (oauth_codes) and refresh tokens
 * (oauth_refresh_tokens). Everything lives in PostgreSQL, so any instance serves any step of a flow.
 * Secrets (client secrets, codes, refresh tokens) are kept only as SHA-256 digests; a secret is found
 * by its digest. Every "use once" is one conditional UPDATE (`… WHERE used_at IS NULL`), so two
 * instances racing on the same code or refresh token cannot both win.
 */
import type { Deps } from '../deps.js';
import type { Tx } from '../access/connections.js';
import { hashSecret, newId, newSecret } from '../platform/secrets.js';
import { LIMITS } from './rules.js';

type Db = Pick<Deps, 'db'>['db'];
/** Rows that outlived their expiry by this long are deleted when new ones are made. */
const KEEP_EXPIRED_MS = 24 * 3600_000;

export const CODE_PREFIX = 'mcp_ac_';
export const REFRESH_PREFIX = 'mcp_rt_';

/** When a row made at `now` with this lifetime expires. */
const expiresAfter = (now: Date, ttlSeconds: number) => new Date(now.getTime() + ttlSeconds * 1000);

// ---------------------------------------------------------------- clients

export interface NewClient {
  id: string;
  name: string;
  redirectUris: string[];
  /** The registered metadata as answered (never the secret). */
  metadata: Record<string, unknown>;
  secretHash: string | null;
  now: Date;
}

export function createClient(db: Db, c: NewClient) {
  return db.prisma.oAuthClient.create({
    data: { id: c.id, name: c.name, redirectUris: c.redirectUris, metadata: c.metadata as object, secretHash: c.secretHash, createdAt: c.now },
  });
}

/** A client described by its metadata document (lib/oauth/client-metadata.ts): made or refreshed under its URL, never with a secret. */
export function upsertMetadataClient(db: Db, c: Omit<NewClient, 'secretHash'>) {
  const data = { name: c.name, redirectUris: c.redirectUris, metadata: c.metadata as object, secretHash: null };
  return db.prisma.oAuthClient.upsert({ where: { id: c.id }, create: { id: c.id, ...data, createdAt: c.now }, update: data });
}

export function findClient(db: Db, id: string) {
  if (id.length === 0 || id.length > 200) return Promise.resolve(null);
  return db.prisma.oAuthClient.findUnique({ where: { id } });
}

export type ClientRow = NonNullable<Awaited<ReturnType<typeof findClient>>>;

// ---------------------------------------------------------------- authorization requests

export interface NewRequest {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  state?: string;
  scopes: string[];
  resource: string;
  now: Date;
  ttlSeconds: number;
}

/** Stores a request for the consent page; returns its id (unguessable: it travels in the consent page's URL). */
export async function createRequest(db: Db, r: NewRequest): Promise<string> {
  const id = newId('oar', 32);
  await db.prisma.oAuthRequest.create({
    data: {
      id,
      clientId: r.clientId,
      redirectUri: r.redirectUri,
      codeChallenge: r.codeChallenge,
      state: r.state ?? null,
      scopes: r.scopes,
      resource: r.resource,
      createdAt: r.now,
      expiresAt: expiresAfter(r.now, r.ttlSeconds),
    },
  });
  await sweep(db, r.now);
  return id;
}

export function findRequest(db: Db, id: string) {
  if (id.length === 0 || id.length > 100) return Promise.resolve(null);
  return db.prisma.oAuthRequest.findUnique({ where: { id }, include: { client: true } });
}

export type RequestRow = NonNullable<Awaited<ReturnType<typeof findRequest>>>;

/**
 * Answers a request once: true for the first answer while it is live; false when it was answered
 * already (a form posted twice, or by two instances at once) or has expired.
 */
export async function answerRequestOn(tx: Pick<Tx, 'oAuthRequest'>, id: string, accountId: string, now: Date): Promise<boolean> {
  const { count } = await tx.oAuthRequest.updateMany({
    where: { id, answeredAt: null, expiresAt: { gt: now } },
    data: { answeredAt: now, answeredBy: accountId },
  });
  return count === 1;
}

// ---------------------------------------------------------------- what codes and refresh tokens share

/** A secret issued under a grant: a code and a refresh token both stand for one, with its resource and scopes. */
export interface GrantedSecret {
  clientId: string;
  connectionId: string;
  grantId: string;
  resource: string;
  scopes: string[];
  now: Date;
  ttlSeconds: number;
}

/** A new secret under `prefix`; `keep` writes the row that holds only its digest. Answers the secret, for the caller to hand on once. */
async function issueSecret(prefix: string, keep: (digest: string) => Promise<unknown>): Promise<string> {
  const secret = newSecret(prefix);
  await keep(hashSecret(secret));
  return secret;
}

/** The columns a code's row and a refresh token's row share: the grant, and when the secret lapses. */
function grantedColumns(g: GrantedSecret) {
  return {
    clientId: g.clientId,
    connectionId: g.connectionId,
    grantId: g.grantId,
    resource: g.resource,
    scopes: g.scopes,
    createdAt: g.now,
    expiresAt: expiresAfter(g.now, g.ttlSeconds),
  };
}

// ---------------------------------------------------------------- authorization codes

export interface NewCode extends GrantedSecret {
  codeChallenge: string;
  redirectUri: string;
}

/** A new single-use code; returns the code (only its digest is kept). */
export function createCodeOn(tx: Pick<Tx, 'oAuthCode'>, c: NewCode): Promise<string> {
  return issueSecret(CODE_PREFIX, (codeHash) =>
    tx.oAuthCode.create({ data: { id: newId('oac', 16), codeHash, codeChallenge: c.codeChallenge, redirectUri: c.redirectUri, ...grantedColumns(c) } }));
}

export function findCode(db: Db, code: string) {
  if (code.length === 0 || code.length > 200) return Promise.resolve(null);
  return db.prisma.oAuthCode.findUnique({ where: { codeHash: hashSecret(code) } });
}

export type CodeRow = NonNullable<Awaited<ReturnType<typeof findCode>>>;

/** Marks a code used: true for the one use; false when it was used already or has expired. */
export async function useCodeOn(tx: Pick<Tx, 'oAuthCode'>, id: string, now: Date): Promise<boolean> {
  const { count } = await tx.oAuthCode.updateMany({ where: { id, usedAt: null, expiresAt: { gt: now } }, data: { usedAt: now } });
  return count === 1;
}

// ---------------------------------------------------------------- refresh tokens

export type NewRefreshToken = GrantedSecret;

/** A new refresh token; returns it (only its digest is kept). */
export function createRefreshTokenOn(tx: Pick<Tx, 'oAuthRefreshToken'>, r: NewRefreshToken): Promise<string> {
  return issueSecret(REFRESH_PREFIX, (secretHash) => tx.oAuthRefreshToken.create({ data: { id: newId('ort', 16), secretHash, ...grantedColumns(r) } }));
}

export function findRefreshToken(db: Db, secret: string) {
  if (secret.length === 0 || secret.length > 200) return Promise.resolve(null);
  return db.prisma.oAuthRefreshToken.findUnique({ where: { secretHash: hashSecret(secret) } });
}

export type RefreshRow = NonNullable<Awaited<ReturnType<typeof findRefreshToken>>>;

export function findRefreshTokenById(db: Db, id: string) {
  return db.prisma.oAuthRefreshToken.findUnique({ where: { id } });
}

/** Marks a refresh token used (rotation): true for the one use; false when used, revoked or expired. */
export async function useRefreshTokenOn(tx: Pick<Tx, 'oAuthRefreshToken'>, id: string, now: Date): Promise<boolean> {
  const { count } = await tx.oAuthRefreshToken.updateMany({
    where: { id, usedAt: null, revokedAt: null, expiresAt: { gt: now } },
    data: { usedAt: now },
  });
  return count === 1;
}

/**
 * Keeps the pair a rotation answered, sealed, on the used token's row (in the rotation's own
 * transaction, so a racing request that finds the token used finds its pair too).
 */
export async function recordSuccessorOn(tx: Pick<Tx, 'oAuthRefreshToken'>, id: string, sealed: string): Promise<void> {
  await tx.oAuthRefreshToken.update({ where: { id }, data: { successorSealed: sealed } });
}

/** Revokes every refresh token of a grant; returns how many were live. */
export async function revokeGrantRefreshTokensOn(tx: Pick<Tx, 'oAuthRefreshToken'>, grantId: string, now: Date): Promise<number> {
  const { count } = await tx.oAuthRefreshToken.updateMany({ where: { grantId, revokedAt: null }, data: { revokedAt: now } });
  return count;
}

/** Rows past their expiry by a day go: requests, codes (a code's reuse is told apart only while it is kept), refresh tokens. */
async function sweep(db: Db, now: Date): Promise<void> {
  const before = new Date(now.getTime() - KEEP_EXPIRED_MS);
  await db.prisma.oAuthRequest.deleteMany({ where: { expiresAt: { lt: before } } });
  await db.prisma.oAuthCode.deleteMany({ where: { expiresAt: { lt: before } } });
  await db.prisma.oAuthRefreshToken.deleteMany({ where: { expiresAt: { lt: before } } });
  // A sealed pair is needed only within the grace window after its rotation.
  await db.prisma.oAuthRefreshToken.updateMany({
    where: { successorSealed: { not: null }, usedAt: { lt: new Date(now.getTime() - LIMITS.refreshGraceSeconds * 1000) } },
    data: { successorSealed: null },
  });
}
