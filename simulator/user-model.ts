/**
 * WhatsApp users as the 2026 channel knows them (Meta, "Business-scoped user IDs", updated
 * March 2026; simulator/README.md cites the sources): every user has a business-scoped user id
 * (BSUID, `US.` + digits) and, with linked portfolios on, a parent BSUID (`US.ENT.` + digits);
 * a user may have a username, and then the phone (`wa_id`, `from`) is included only when the
 * user shares it with the business. Marketing preferences (stop / resume) live here too.
 *
 * Users are per simulated number (a BSUID is scoped to the business). A user is created by the
 * control API (POST /_sim/users, simulator/users.ts) or on first contact by phone.
 */
import { randomInt } from 'node:crypto';

type Obj = Record<string, unknown>;

export const BSUID = /^[A-Z]{2}\.(?:ENT\.)?[A-Za-z0-9]{1,128}$/;

export interface SimUser {
  pnid: string;
  user_id: string;
  parent_user_id: string | null;
  /** The user's real number (digits), if it has one the simulator knows. */
  phone: string | null;
  /** Whether webhooks include the phone (always without a username; with one, only when shared). */
  phone_shared: boolean;
  username: string | null;
  name: string;
  /** The user stopped marketing messages from this business (131050 for a marketing template). */
  marketing_stopped: boolean;
}

export function digits(n: number): string {
  let s = String(randomInt(1, 10));
  while (s.length < n) s += String(randomInt(0, 10));
  return s;
}

export function newBsuid(country = 'US'): string {
  return `${country}.${digits(20)}`;
}

/** The users of the simulator, by `${pnid}:${user_id}` and by `${pnid}:${phone}`. */
export class SimUsers {
  private byId = new Map<string, SimUser>();
  private byPhone = new Map<string, SimUser>();
  /** Linked portfolios: parent BSUIDs in every messages webhook (Meta: when enabled). */
  parents = true;

  get(pnid: string, userId: string): SimUser | undefined {
    return this.byId.get(`${pnid}:${userId}`);
  }

  getByPhone(pnid: string, phone: string): SimUser | undefined {
    return this.byPhone.get(`${pnid}:${phone}`);
  }

  add(u: SimUser): SimUser {
    if (this.byId.size >= 200_000) this.clear();
    this.byId.set(`${u.pnid}:${u.user_id}`, u);
    if (u.phone) this.byPhone.set(`${u.pnid}:${u.phone}`, u);
    return u;
  }

  /** The user of a phone, created (no username, phone shared) on first contact. */
  ofPhone(pnid: string, phone: string, name?: string): SimUser {
    return this.getByPhone(pnid, phone) ?? this.add({
      pnid, user_id: newBsuid(), parent_user_id: this.parents ? `US.ENT.${digits(20)}` : null, phone, phone_shared: true,
      username: null, name: name ?? `User ${phone.slice(-4)}`, marketing_stopped: false,
    });
  }

  rekey(u: SimUser, next: string): void {
    this.byId.delete(`${u.pnid}:${u.user_id}`);
    u.user_id = next;
    this.byId.set(`${u.pnid}:${u.user_id}`, u);
  }

  clear(): void {
    this.byId.clear();
    this.byPhone.clear();
  }

  /** Every user (the snapshot's, simulator/persistence.ts). */
  all(): SimUser[] {
    return [...this.byId.values()];
  }

  get size(): number {
    return this.byId.size;
  }
}

/** The phone the user's webhooks show, if any. */
export function shownPhone(u: SimUser): string | undefined {
  return u.phone && (u.phone_shared || !u.username) ? u.phone : undefined;
}

/** `contacts[]` entry of a messages webhook for this user. */
export function contactEntry(u: SimUser, withUsername = true): Obj {
  const phone = shownPhone(u);
  const profile: Obj = { name: u.name };
  if (withUsername && u.username) profile.username = u.username;
  return {
    profile,
    ...(phone ? { wa_id: phone } : {}),
    user_id: u.user_id,
    ...(u.parent_user_id ? { parent_user_id: u.parent_user_id } : {}),
  };
}

/** The sender fields of an inbound message. */
export function senderFields(u: SimUser): Obj {
  const phone = shownPhone(u);
  return {
    ...(phone ? { from: phone } : {}),
    from_user_id: u.user_id,
    ...(u.parent_user_id ? { from_parent_user_id: u.parent_user_id } : {}),
  };
}


export function isBsuidLike(v: unknown): v is string {
  return typeof v === 'string' && BSUID.test(v);
}
