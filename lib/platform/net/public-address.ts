/**
 * Outbound requests to addresses users give us (webhook URLs, media and header-sample downloads)
 * may only reach the public internet. The rule is applied to the resolved address that is actually
 * connected to (`pinnedLookup`), so a name that resolves to a public address when checked and a
 * private one when connecting (DNS rebinding) cannot slip through. Private, loopback, link-local,
 * unique-local, documentation, carrier-grade NAT, multicast and reserved ranges are refused. An IPv6
 * address that embeds an IPv4 address (IPv4-compatible ::a.b.c.d, mapped ::ffff:a.b.c.d, translated
 * ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96) is judged by that IPv4 address, since the connection reaches
 * it; 6to4 (2002::/16, deprecated) and local-use NAT64 (64:ff9b:1::/48) stay refused whole.
 * `DEV_ALLOW_PRIVATE_TARGETS` lifts the address rule for local development and tests only.
 */
import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';

// Two lists: Node's BlockList matches an IPv4 address against IPv6 rules too (as its IPv4-mapped
// form), so one shared list with ::ffff:0:0/96 would refuse every IPv4 address.
const blocked4 = new BlockList();
const blocked6 = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked4.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  // ::/96, ::ffff:0:0/96, ::ffff:0:0:0/96 and 64:ff9b::/96 are judged by their IPv4 address (embeddedIPv4); listed
  // here too so that a form the parser does not understand is refused, never let through.
  ['::', 96], ['::ffff:0:0', 96], ['::ffff:0:0:0', 96], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23],
  ['2001:db8::', 32], ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) blocked6.addSubnet(net, prefix, 'ipv6');

export class UnsafeTargetError extends Error {
  constructor(readonly reason: 'invalid_url' | 'scheme' | 'credentials' | 'private_address' | 'unresolvable', message: string) {
    super(message);
    this.name = 'UnsafeTargetError';
  }
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted quad and a zone id allowed), or null. */
function ipv6Groups(address: string): number[] | null {
  let a = address.replace(/%.*$/, '').toLowerCase();
  const quad = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(a);
  if (quad) {
    const b = quad.slice(2).map(Number);
    if (b.some((x) => x > 255)) return null;
    a = `${quad[1]}${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`;
  }
  const halves = a.split('::');
  if (halves.length > 2) return null;
  const part = (h: string) => (h === '' ? [] : h.split(':'));
  const head = part(halves[0]);
  const tail = halves.length === 2 ? part(halves[1]) : [];
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  if (fill < 0 || (halves.length === 1 && head.length !== 8)) return null;
  const groups = [...head, ...Array(fill).fill('0'), ...tail];
  if (groups.length !== 8 || groups.some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return null;
  return groups.map((g) => parseInt(g, 16));
}

/**
 * The IPv4 address an IPv6 address carries and reaches, for the forms that embed one: IPv4-compatible
 * (::/96, which includes :: and ::1 as 0.0.0.0 and 0.0.0.1, both refused as 0.0.0.0/8), IPv4-mapped
 * (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96) and the NAT64 well-known prefix (64:ff9b::/96).
 */
export function embeddedIPv4(address: string): string | null {
  if (isIP(address) !== 6) return null;
  const g = ipv6Groups(address);
  if (!g) return null;
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const embeds =
    (zero(0, 6)) || // compatible
    (zero(0, 5) && g[5] === 0xffff) || // mapped
    (zero(0, 4) && g[4] === 0xffff && g[5] === 0) || // translated
    (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)); // NAT64 well-known prefix
  if (!embeds) return null;
  return [g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff].join('.');
}

export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 4) return !blocked4.check(address, 'ipv4');
  const v4 = embeddedIPv4(address);
  if (v4 !== null) return !blocked4.check(v4, 'ipv4');
  return !blocked6.check(address.replace(/%.*$/, ''), 'ipv6');
}

/** A loopback address (127.0.0.0/8, ::1, or an IPv6 form embedding 127.0.0.0/8). */
export function isLoopbackAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return address.startsWith('127.');
  if (family !== 6) return false;
  const bare = address.replace(/%.*$/, '');
  const g = ipv6Groups(bare);
  if (g && g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return true;
  const v4 = embeddedIPv4(bare);
  return v4 !== null && v4.startsWith('127.');
}

export interface TargetPolicy {
  /** DEV_ALLOW_PRIVATE_TARGETS: private and loopback addresses allowed (development and tests only). */
  allowPrivate: boolean;
  /** Plain http accepted (downloads); webhooks take https only, or http to loopback under allowPrivate. */
  allowHttp: boolean;
}

/** Parses and checks a URL's form: scheme, no credentials. */
export function checkUrl(raw: string, policy: TargetPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeTargetError('invalid_url', 'Not a valid absolute URL.');
  }
  if (url.username || url.password) throw new UnsafeTargetError('credentials', 'URLs with credentials are not accepted.');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const loopbackHttp = policy.allowPrivate && url.protocol === 'http:' && (host === 'localhost' || /^127\./.test(host) || host === '::1');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && (policy.allowHttp || loopbackHttp))) {
    throw new UnsafeTargetError('scheme', policy.allowHttp ? 'Only http and https URLs are accepted.' : 'Only https URLs are accepted.');
  }
  return url;
}

/** Resolves a host; every address it resolves to must be public (unless allowed), and the first is returned. */
export async function resolveTarget(hostname: string, policy: Pick<TargetPolicy, 'allowPrivate'> & { allowLoopback?: boolean }): Promise<{ address: string; family: 4 | 6 }> {
  const host = hostname.replace(/^\[|\]$/g, '');
  let addresses: { address: string; family: number }[];
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) }];
  } else {
    try {
      addresses = await dnsLookup(host, { all: true, verbatim: true });
    } catch {
      throw new UnsafeTargetError('unresolvable', `Host "${host}" does not resolve.`);
    }
  }
  if (addresses.length === 0) throw new UnsafeTargetError('unresolvable', `Host "${host}" does not resolve.`);
  if (!policy.allowPrivate && addresses.some((a) => !isPublicAddress(a.address) && !(policy.allowLoopback && isLoopbackAddress(a.address)))) {
    throw new UnsafeTargetError('private_address', `Host "${host}" resolves to a private, loopback or otherwise non-public address.`);
  }
  return { address: addresses[0].address, family: addresses[0].family === 6 ? 6 : 4 };
}

/** A `lookup` for http(s) requests that connects to the address already checked, whatever DNS says now. */
export function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return ((_hostname: string, options: any, callback: any) => {
    const cb = typeof options === 'function' ? options : callback;
    if (options && typeof options === 'object' && options.all) cb(null, [{ address, family }]);
    else cb(null, address, family);
  }) as LookupFunction;
}
