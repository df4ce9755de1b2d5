/**
 * Which webhook URLs the service will POST to (SSRF safety): https only, and only hosts whose every address is public
 * — never private, loopback, link-local, the instance metadata range or any other special-purpose block. Checked at
 * registration and again at every delivery (DNS can change), and the delivery connects to the very address checked
 * (post.ts pins it), so a name that resolves differently a moment later cannot slip through. The local stack
 * (WEBHOOK_ALLOW_LOCALHOST) also accepts http(s)://127.0.0.1 and http(s)://localhost — those two hosts only.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { webhookSettings } from '../infra/resources.js';

/** Special-purpose address blocks (IANA registries): nothing a customer's public receiver lives at. */
const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, the instance metadata service (169.254.169.254) among them
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments (ECS/EKS metadata 169.254.170.2 is in link-local above)
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b::', 96], // NAT64 of any IPv4 address, private ones included
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments (Teredo, ORCHID, ...)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: embeds any IPv4 address
  ['fc00::', 7], // unique local, the instance metadata service's fd00:ec2::254 among them
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/** Whether `address` (an IP literal) is an ordinary public unicast address. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !blocked.check(address, 'ipv4');
  if (family !== 6) return false;
  // IPv4-mapped (::ffff:a.b.c.d, or ::ffff:xxxx:xxxx): judged as the IPv4 address. (Not a BlockList rule: Node
  // matches plain IPv4 addresses against an IPv4-mapped subnet too, which would block them all.)
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted?.[1]) return isPublicAddress(dotted[1]);
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex?.[1] && hex[2]) {
    const [high, low] = [Number.parseInt(hex[1], 16), Number.parseInt(hex[2], 16)];
    return isPublicAddress(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`);
  }
  return !blocked.check(address, 'ipv6');
}

export interface SafetyOptions {
  /** The local stack: http(s)://127.0.0.1 and http(s)://localhost are accepted too. */
  allowLocalhost: boolean;
  /** Resolves a host name to every address (tests pass their own). */
  resolve?: (host: string) => Promise<string[]>;
}

/** A URL found safe: the address a delivery connects to, and the URL itself. */
export interface SafeTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

/** Why a URL is refused: the `reason` of a 400 at registration, the `error` of a delivery attempt. */
export class UnsafeUrlError extends Error {}

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost']);

async function resolveAll(host: string): Promise<string[]> {
  const answers = await lookup(host, { all: true, verbatim: true });
  return answers.map((a) => a.address);
}

/** Parses and checks `raw` without resolving it: scheme, length, credentials, host. */
export function parseWebhookUrl(raw: string, options: Pick<SafetyOptions, 'allowLocalhost'>): URL {
  if (raw.length > webhookSettings.urlMaxLength) {
    throw new UnsafeUrlError(`the URL is longer than ${webhookSettings.urlMaxLength} characters`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeUrlError('not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UnsafeUrlError('the URL is not http(s)');
  if (url.username !== '' || url.password !== '') throw new UnsafeUrlError('the URL must not carry credentials');
  const local = options.allowLocalhost && LOCAL_HOSTS.has(url.hostname);
  if (url.protocol === 'http:' && !local) throw new UnsafeUrlError('the URL must be https');
  return url;
}

/**
 * Checks `raw` and resolves its host: the address to connect to. Throws UnsafeUrlError with the reason when the URL
 * is refused (not http(s), too long, unresolvable, or any of its addresses not public).
 */
export async function checkWebhookUrl(raw: string, options: SafetyOptions): Promise<SafeTarget> {
  const url = parseWebhookUrl(raw, options);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const local = options.allowLocalhost && LOCAL_HOSTS.has(url.hostname);
  let addresses: string[];
  if (isIP(host) !== 0) {
    addresses = [host];
  } else {
    try {
      addresses = await (options.resolve ?? resolveAll)(host);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) throw new UnsafeUrlError(`the host ${host} does not resolve`);
  }
  for (const address of addresses) {
    const allowed = local ? address === '127.0.0.1' || address === '::1' : isPublicAddress(address);
    if (!allowed) {
      throw new UnsafeUrlError(
        local
          ? `localhost resolves to ${address}, not a loopback address`
          : `the host resolves to ${address}, a private, loopback, link-local or reserved address`,
      );
    }
  }
  // Every address passed; the first is the one connected to (on the local stack IPv4 first: receivers there listen
  // on 127.0.0.1).
  const address = (local && addresses.includes('127.0.0.1') ? '127.0.0.1' : addresses[0]) as string;
  return { url, address, family: isIP(address) === 6 ? 6 : 4 };
}
