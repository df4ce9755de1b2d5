/**
 * Which webhook URLs the service will POST to (SSRF safety): https on port 443 only, and only hosts whose every
 * address is public — never private, loopback, link-local, site-local, the instance metadata range or any other
 * special-purpose block, nor an IPv6 address that embeds such an IPv4 address. Checked at registration and again at
 * every delivery (DNS can change), and the delivery connects to the very address checked (post.ts pins it), so a name
 * that resolves differently a moment later cannot slip through. The local stack (WEBHOOK_ALLOW_LOCALHOST) also
 * accepts http(s)://127.0.0.1 and http(s)://localhost on any port — those two hosts only.
 * Not to undo: a refusal never names the address a host resolved to (a tenant could map a network with it), and the
 * lookup has its own deadline (webhookSettings.dnsTimeoutMs): a slow DNS answer never holds a delivery.
 */
import { lookup, Resolver } from 'node:dns/promises';
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
// ::/96, ::ffff:0:0/96 and ::ffff:0:0:0/96 are not listed: they embed an IPv4 address, judged as that address.
for (const [network, prefix] of [
  ['64:ff9b::', 96], // NAT64 of any IPv4 address, private ones included
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments (Teredo, ORCHID, ...)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: embeds any IPv4 address
  ['fc00::', 7], // unique local, the instance metadata service's fd00:ec2::254 among them
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed inside some networks)
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/** The eight 16-bit groups of an IPv6 literal, or undefined. The URL parser writes it canonical, in hex only. */
function ipv6Groups(address: string): number[] | undefined {
  let canonical: string;
  try {
    canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const [head = '', tail] = canonical.split('::');
  if (tail === undefined) return groups(head);
  const [before, after] = [groups(head), groups(tail)];
  return [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
}

/**
 * The IPv4 address an IPv6 address stands for: IPv4-compatible (`::/96`, `::` and `::1` among them), IPv4-mapped
 * (`::ffff:0:0/96`) and IPv4-translated (`::ffff:0:0:0/96`). Undefined for any other address.
 */
function embeddedIPv4(groups: number[]): string | undefined {
  const zeros = (n: number) => groups.slice(0, n).every((g) => g === 0);
  const [g4, g5, g6 = 0, g7 = 0] = groups.slice(4);
  const embeds = zeros(6) || (zeros(5) && g5 === 0xffff) || (zeros(4) && g4 === 0xffff && g5 === 0);
  return embeds ? `${g6 >> 8}.${g6 & 255}.${g7 >> 8}.${g7 & 255}` : undefined;
}

/** Whether `address` (an IP literal) is an ordinary public unicast address. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !blocked.check(address, 'ipv4');
  if (family !== 6) return false;
  const groups = ipv6Groups(address);
  if (groups?.length !== 8) return false;
  const v4 = embeddedIPv4(groups);
  if (v4 !== undefined) return isPublicAddress(v4);
  return !blocked.check(address, 'ipv6');
}

export interface SafetyOptions {
  /** The local stack: http(s)://127.0.0.1 and http(s)://localhost are accepted too. */
  allowLocalhost: boolean;
  /** Resolves a host name to every address (tests pass their own). */
  resolve?: (host: string) => Promise<string[]>;
  /** The lookup's deadline (default webhookSettings.dnsTimeoutMs). */
  dnsTimeoutMs?: number;
}

/** A URL found safe: the address a delivery connects to, and the URL itself. */
export interface SafeTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

/**
 * Why a URL is refused: the `reason` of a 400 at registration. `timeout` when the host's lookup took too long (a
 * delivery records it as a `timeout`), `refused` otherwise.
 */
export class UnsafeUrlError extends Error {
  constructor(
    message: string,
    readonly kind: 'refused' | 'timeout' = 'refused',
  ) {
    super(message);
    this.name = 'UnsafeUrlError';
  }
}

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost']);

/**
 * Every A and AAAA address of `host`, through c-ares (not getaddrinfo, whose lookups hold one of libuv's four
 * threads for as long as the resolver waits). A family that fails to answer contributes nothing.
 */
async function resolvePublic(host: string, timeoutMs: number): Promise<string[]> {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  const answers = await Promise.all([
    resolver.resolve4(host).catch(() => [] as string[]),
    resolver.resolve6(host).catch(() => [] as string[]),
  ]);
  return answers.flat();
}

/** The local exception's `localhost`: what the machine says it is (its hosts file). */
async function resolveLocal(host: string): Promise<string[]> {
  const answers = await lookup(host, { all: true, verbatim: true });
  return answers.map((a) => a.address);
}

/** `promise`, or an UnsafeUrlError of kind `timeout` about `host` after `ms`. */
async function within<T>(promise: Promise<T>, host: string, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    const why = `the host ${host} does not resolve (no answer within ${ms} ms)`;
    timer = setTimeout(() => reject(new UnsafeUrlError(why, 'timeout')), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Parses and checks `raw` without resolving it: scheme, port, length, credentials, host. */
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
  // The parser drops https's own port (443): any port left is another one.
  if (url.port !== '' && !local) throw new UnsafeUrlError('the URL must use https on port 443');
  return url;
}

/**
 * Checks `raw` and resolves its host: the address to connect to. Throws UnsafeUrlError with the reason when the URL
 * is refused (not https on 443, too long, unresolvable in time, or any of its addresses not public).
 */
export async function checkWebhookUrl(raw: string, options: SafetyOptions): Promise<SafeTarget> {
  const url = parseWebhookUrl(raw, options);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const local = options.allowLocalhost && LOCAL_HOSTS.has(url.hostname);
  const timeoutMs = options.dnsTimeoutMs ?? webhookSettings.dnsTimeoutMs;
  let addresses: string[];
  if (isIP(host) !== 0) {
    addresses = [host];
  } else {
    const resolve = options.resolve ?? (local ? resolveLocal : (name: string) => resolvePublic(name, timeoutMs));
    try {
      addresses = await within(resolve(host), host, timeoutMs);
    } catch (error: unknown) {
      if (error instanceof UnsafeUrlError) throw error;
      addresses = [];
    }
    if (addresses.length === 0) throw new UnsafeUrlError(`the host ${host} does not resolve`);
  }
  for (const address of addresses) {
    const allowed = local ? address === '127.0.0.1' || address === '::1' : isPublicAddress(address);
    if (!allowed) {
      throw new UnsafeUrlError(
        local
          ? 'localhost does not resolve to loopback addresses only'
          : 'the host resolves to a private, loopback, link-local or reserved address',
      );
    }
  }
  // Every address passed; the first is the one connected to (on the local stack IPv4 first: receivers there listen
  // on 127.0.0.1).
  const address = (local && addresses.includes('127.0.0.1') ? '127.0.0.1' : addresses[0]) as string;
  return { url, address, family: isIP(address) === 6 ? 6 : 4 };
}
