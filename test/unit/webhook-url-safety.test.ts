/**
 * Which webhook URLs the service POSTs to (shared/events/url-safety.ts): https to public addresses only, every address
 * of a name checked, and on the local stack http(s) to 127.0.0.1 and localhost besides.
 */
import { checkWebhookUrl, isPublicAddress, UnsafeUrlError } from '../../shared/events/url-safety.js';

type Resolve = (host: string) => Promise<string[]>;
const resolvesTo =
  (...addresses: string[]): Resolve =>
  async () =>
    addresses;
const deployed = (resolve: Resolve = resolvesTo('93.184.215.14')) => ({ allowLocalhost: false, resolve });
const local = (resolve: Resolve = resolvesTo('127.0.0.1')) => ({ allowLocalhost: true, resolve });

async function reason(url: string, options: Parameters<typeof checkWebhookUrl>[1]): Promise<string> {
  try {
    await checkWebhookUrl(url, options);
  } catch (error: unknown) {
    if (error instanceof UnsafeUrlError) return error.message;
    throw error;
  }
  return 'accepted';
}

describe('isPublicAddress', () => {
  test.each([
    '10.0.0.1',
    '172.16.5.4',
    '192.168.0.1',
    '127.0.0.1',
    '127.255.0.9',
    '169.254.169.254',
    '169.254.170.2',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '198.18.0.1',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254',
    'fc00::1',
    '::ffff:10.0.0.1',
    '::ffff:127.0.0.1',
    '::ffff:a00:1',
    '::ffff:7f00:1',
    '64:ff9b::a00:1',
    '2002:a00:1::1',
    'ff02::1',
    'not-an-ip',
    // IPv4-compatible (::/96): the IPv4 address it embeds decides.
    '::7f00:1',
    '::127.0.0.1',
    '::a00:1',
    '::169.254.169.254',
    '::c0a8:101',
    // IPv4-mapped, written out in full or in hex, and IPv4-translated (::ffff:0:0:0/96).
    '0:0:0:0:0:ffff:7f00:1',
    '::ffff:0:a00:1',
    '::ffff:0:127.0.0.1',
    // Site-local (fec0::/10).
    'fec0::1',
    'fed3:1::5',
    'feff::1',
  ])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  test.each(['93.184.215.14', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '::ffff:0:8.8.8.8'])(
    '%s is public',
    (address) => {
      expect(isPublicAddress(address)).toBe(true);
    },
  );
});

describe('checkWebhookUrl, deployed', () => {
  test('an https URL whose every address is public is accepted, with the address to connect to', async () => {
    const target = await checkWebhookUrl('https://hooks.example.com/vision?x=1', deployed(resolvesTo('93.184.215.14')));
    expect(target).toEqual(expect.objectContaining({ address: '93.184.215.14', family: 4 }));
    expect(target.url.href).toBe('https://hooks.example.com/vision?x=1');
  });

  test.each([
    ['ftp://hooks.example.com/', 'not http(s)'],
    ['http://hooks.example.com/', 'must be https'],
    ['http://127.0.0.1:8080/', 'must be https'],
    ['https://user:pass@hooks.example.com/', 'credentials'],
    ['not a url', 'not a URL'],
    ['https://hooks.example.com:8443/', 'port 443'],
    ['https://hooks.example.com:80/', 'port 443'],
    [`https://hooks.example.com/${'a'.repeat(2049)}`, 'longer than 2048'],
  ])('%s is refused: %s', async (url, why) => {
    expect(await reason(url, deployed())).toContain(why);
  });

  test('https on port 443 written out is the same URL, and accepted', async () => {
    expect((await checkWebhookUrl('https://hooks.example.com:443/v', deployed())).url.href).toBe(
      'https://hooks.example.com/v',
    );
  });

  test('a name with one private address among public ones is refused (the rebinding trick)', async () => {
    expect(await reason('https://hooks.example.com/', deployed(resolvesTo('93.184.215.14', '10.0.0.7')))).toContain(
      'private',
    );
  });

  test.each(['169.254.169.254', '127.0.0.1', '192.168.1.1', 'fd00:ec2::254', '::1', '::a00:7', 'fec0::9'])(
    'a name resolving to %s is refused, and the refusal never names the address (no map of a network)',
    async (address) => {
      const why = await reason('https://hooks.example.com/', deployed(resolvesTo('93.184.215.14', address)));
      expect(why).toContain('private');
      expect(why).not.toContain(address);
    },
  );

  test('a lookup that does not answer in time is refused as a timeout', async () => {
    // Without a deadline this would wait for ever (and the test time out).
    const silent: Resolve = () => new Promise(() => undefined);
    const refused = await checkWebhookUrl('https://slow.example/', { ...deployed(silent), dnsTimeoutMs: 100 }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(UnsafeUrlError);
    expect((refused as UnsafeUrlError).kind).toBe('timeout');
  });

  test('literal private addresses are refused without resolving; localhost is not special', async () => {
    const asked: string[] = [];
    const resolve = async (host: string) => {
      asked.push(host);
      return ['127.0.0.1'];
    };
    expect(await reason('https://10.0.0.1/', deployed(resolve))).toContain('private');
    expect(await reason('https://[::1]/', deployed(resolve))).toContain('private');
    expect(asked).toEqual([]);
    expect(await reason('https://localhost/', deployed(resolve))).toContain('private');
  });

  test('a name that does not resolve is refused', async () => {
    const failing = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    expect(await reason('https://no-such.example/', deployed(failing))).toContain('does not resolve');
    expect(await reason('https://no-such.example/', deployed(resolvesTo()))).toContain('does not resolve');
  });
});

describe('checkWebhookUrl, local stack', () => {
  test('http and https to 127.0.0.1 and localhost are accepted', async () => {
    for (const url of ['http://127.0.0.1:9000/hook', 'https://127.0.0.1/', 'http://localhost:3000/x']) {
      expect(await reason(url, local(resolvesTo('::1', '127.0.0.1')))).toBe('accepted');
    }
    // IPv4 first: receivers on the local stack listen on 127.0.0.1.
    expect((await checkWebhookUrl('http://localhost:3000/', local(resolvesTo('::1', '127.0.0.1')))).address).toBe(
      '127.0.0.1',
    );
  });

  test('other private hosts stay refused, and plain http stays refused for every other host', async () => {
    expect(await reason('http://192.168.1.5/', local())).toContain('must be https');
    expect(await reason('https://10.0.0.1/', local())).toContain('private');
    expect(await reason('http://hooks.example.com/', local())).toContain('must be https');
    // A localhost that resolves elsewhere is not a loopback receiver.
    expect(await reason('http://localhost/', local(resolvesTo('10.1.1.1')))).toContain('loopback addresses only');
    // Deployed-only rule aside, other hosts keep https on 443 on the local stack too.
    expect(await reason('https://hooks.example.com:8443/', local())).toContain('port 443');
  });
});
