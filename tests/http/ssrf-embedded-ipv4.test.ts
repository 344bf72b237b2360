/**
 * IPv6 forms that carry an IPv4 address are judged by that IPv4 address, on every outbound path:
 * the shared rule (lib/platform/net/public-address.ts), a webhook delivery attempt (which re-checks
 * the registered URL before connecting) and a download (safeDownload). Registration and the
 * header-sample download are covered through HTTP in webhooks-registrations and header-samples.
 */
import { describe, expect, it } from '@jest/globals';
import { embeddedIPv4, isPublicAddress } from '../../lib/platform/net/public-address.js';
import { AgentPool, postWebhook } from '../../lib/webhooks/http-post.js';
import { DownloadError, safeDownload } from '../../lib/platform/net/safe-download.js';

const refused: [string, string][] = [
  ['::127.0.0.1', 'IPv4-compatible loopback'],
  ['::7f00:1', 'IPv4-compatible loopback in hex'],
  ['0:0:0:0:0:0:127.0.0.1', 'IPv4-compatible loopback, uncompressed'],
  ['::10.0.0.1', 'IPv4-compatible private'],
  ['::169.254.169.254', 'IPv4-compatible cloud metadata'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback in hex'],
  ['0:0:0:0:0:ffff:192.168.1.1', 'IPv4-mapped private, uncompressed'],
  ['::ffff:0:127.0.0.1', 'IPv4-translated loopback'],
  ['::ffff:0:7f00:1', 'IPv4-translated loopback in hex'],
  ['::FFFF:0:A9FE:A9FE', 'IPv4-translated cloud metadata, upper case'],
  ['64:ff9b::127.0.0.1', 'NAT64 loopback'],
  ['64:ff9b::a9fe:a9fe', 'NAT64 cloud metadata in hex'],
  ['64:ff9b::172.16.0.1', 'NAT64 private'],
  ['64:ff9b:1::8.8.8.8', 'local-use NAT64 (refused whole)'],
  ['2002:7f00:1::1', '6to4 of loopback (refused whole)'],
  ['2002:808:808::1', '6to4 of a public address (refused whole: deprecated relays)'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['::ffff:999.0.0.1', 'a dotted quad out of range'],
];
const allowed: [string, string][] = [
  ['::ffff:8.8.8.8', 'IPv4-mapped public'],
  ['::ffff:0:8.8.8.8', 'IPv4-translated public'],
  ['64:ff9b::1.1.1.1', 'NAT64 of a public address'],
  ['2606:4700:4700::1111', 'a public IPv6 address'],
  ['93.184.216.34', 'a public IPv4 address'],
];

describe('address rule: IPv6 forms that embed an IPv4 address', () => {
  it.each(refused)('When the address is %s (%s), then it is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
  it.each(allowed)('When the address is %s (%s), then it is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
  it('When a form embeds an IPv4 address, then that address is what it is judged by', () => {
    expect(embeddedIPv4('::7f00:1')).toBe('127.0.0.1');
    expect(embeddedIPv4('::ffff:0:a9fe:a9fe')).toBe('169.254.169.254');
    expect(embeddedIPv4('64:ff9b::0a00:0001')).toBe('10.0.0.1');
    expect(embeddedIPv4('2606:4700:4700::1111')).toBeNull();
    expect(embeddedIPv4('127.0.0.1')).toBeNull();
  });
});

describe('delivery and download refuse the embedded forms without connecting', () => {
  const hosts = ['[::127.0.0.1]', '[::ffff:0:127.0.0.1]', '[64:ff9b::7f00:1]', '[::ffff:169.254.169.254]'];

  it.each(hosts)('When a stored webhook URL points at %s, then the delivery attempt is refused before connecting', async (host) => {
    const agents = new AgentPool();
    const r = await postWebhook(`https://${host}:4999/h`, '{}', {}, { timeoutMs: 2000, allowPrivate: false, bodyCap: 1024, agents });
    expect(r.ok).toBe(false);
    expect(r.statusCode).toBeNull();
    expect(r.error).toMatch(/^refused: .*non-public/);
  });

  it.each(hosts)('When a download URL points at %s, then it is forbidden', async (host) => {
    const sink = { precheck: () => undefined, write: async () => undefined };
    const err = await safeDownload(`http://${host}:4999/x`, { sink, allowPrivate: false, timeoutMs: 2000 }).catch((e) => e);
    expect(err).toBeInstanceOf(DownloadError);
    expect((err as DownloadError).reason).toBe('forbidden');
  });
});
