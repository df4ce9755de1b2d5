/**
 * The signature a delivery carries (shared/events/signature.ts) and the SDK's verifyWebhook: a receiver accepts
 * exactly the body the service signed, with the endpoint's secret, within the timestamp tolerance.
 */
import { createHmac } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyWebhook, WebhookSignatureError } from '../../sdk/index.js';
import { generateWebhookSecret } from '../../shared/events/secrets.js';
import { signatureHeader } from '../../shared/events/signature.js';

const secret = 'whsec_test-secret-0123456789';
const body = JSON.stringify({ id: 'evt_1', type: 'run.completed', createdAt: '2026-11-26T00:00:00.000Z', data: {} });
const t = 1_795_000_000;
const now = t * 1000;

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error: unknown) {
    if (error instanceof WebhookSignatureError) return error.reason;
    throw error;
  }
  return 'accepted';
}

test('the header is t=<seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">', () => {
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  expect(signatureHeader(secret, body, t)).toBe(`t=${t},v1=${expected}`);
});

test('verifyWebhook accepts the signed body (string or bytes) and returns the event', () => {
  const header = signatureHeader(secret, body, t);
  expect(verifyWebhook(body, header, secret, { now })).toEqual(JSON.parse(body));
  expect(verifyWebhook(new TextEncoder().encode(body), header, secret, { now }).id).toBe('evt_1');
});

test('a changed body, another secret, or a missing or malformed header is refused', () => {
  const header = signatureHeader(secret, body, t);
  expect(refusal(() => verifyWebhook(`${body} `, header, secret, { now }))).toBe('mismatch');
  expect(refusal(() => verifyWebhook(body, header, 'whsec_another-secret-0123456789', { now }))).toBe('mismatch');
  expect(refusal(() => verifyWebhook(body, undefined, secret, { now }))).toBe('missing');
  expect(refusal(() => verifyWebhook(body, 'v1=abc', secret, { now }))).toBe('malformed');
  expect(refusal(() => verifyWebhook(body, `t=${t}`, secret, { now }))).toBe('malformed');
  // The timestamp is signed too: moving it breaks the signature.
  expect(refusal(() => verifyWebhook(body, header.replace(`t=${t}`, `t=${t + 1}`), secret, { now }))).toBe('mismatch');
});

test('a signature older or newer than the tolerance is refused (a replay); the tolerance is adjustable', () => {
  const header = signatureHeader(secret, body, t);
  expect(refusal(() => verifyWebhook(body, header, secret, { now: now + 301_000 }))).toBe('expired');
  expect(refusal(() => verifyWebhook(body, header, secret, { now: now - 301_000 }))).toBe('expired');
  expect(refusal(() => verifyWebhook(body, header, secret, { now: now + 299_000 }))).toBe('accepted');
  expect(refusal(() => verifyWebhook(body, header, secret, { now: now + 301_000, toleranceSec: 600 }))).toBe(
    'accepted',
  );
});

describe('a receiver set up wrong refuses every delivery, forged or not', () => {
  /** The message verifyWebhook threw (a TypeError), or 'accepted'. */
  function setupError(fn: () => unknown): string {
    try {
      fn();
    } catch (error: unknown) {
      if (error instanceof TypeError) return error.message;
      throw error;
    }
    return 'accepted';
  }

  test.each([
    ['empty', ''],
    ['the prefix alone', 'whsec_'],
    ['not whsec_', 'sk_live_0123456789abcdef0123'],
    ['a few characters', 'whsec_abc'],
  ])('a secret that is %s is refused, even for an event signed with it', (_, bad) => {
    const forged = signatureHeader(bad, body, t);
    expect(setupError(() => verifyWebhook(body, forged, bad, { now }))).toMatch(/whsec_/);
    // An unset variable reaches the SDK as undefined in JavaScript.
    expect(setupError(() => verifyWebhook(body, forged, undefined as unknown as string, { now }))).toMatch(/whsec_/);
  });

  test.each([NaN, Infinity, -1])('a tolerance of %s is refused (NaN would skip the replay window)', (toleranceSec) => {
    const header = signatureHeader(secret, body, t);
    expect(setupError(() => verifyWebhook(body, header, secret, { now: now + 10 ** 9, toleranceSec }))).toMatch(
      /toleranceSec/,
    );
  });

  test.each([NaN, Infinity])('a current time of %s is refused', (bad) => {
    const header = signatureHeader(secret, body, t);
    expect(setupError(() => verifyWebhook(body, header, secret, { now: bad }))).toMatch(/now/);
  });
});

test('any one matching v1 signature is enough (a header may carry several)', () => {
  const good = signatureHeader(secret, body, t).split(',')[1];
  expect(refusal(() => verifyWebhook(body, `t=${t},v1=${'0'.repeat(64)},${good}`, secret, { now }))).toBe('accepted');
});

test('secrets are whsec_ and 32 random bytes, base64url', () => {
  const a = generateWebhookSecret();
  expect(a).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
  expect(Buffer.from(a.slice(6), 'base64url')).toHaveLength(32);
  expect(generateWebhookSecret()).not.toBe(a);
});

describe('the "without the SDK" check in docs/webhooks.md, run as written', () => {
  type Verified = (rawBody: Buffer, header: unknown, secret: unknown) => boolean;
  let verified: Verified;

  beforeAll(async () => {
    const doc = await readFile(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');
    const block = /Without the SDK, the check is[\s\S]*?```js\n([\s\S]*?)```/.exec(doc)?.[1];
    if (!block) throw new Error('docs/webhooks.md has no "Without the SDK" block');
    const file = join(tmpdir(), `webhook-check-${process.pid}.mjs`);
    await writeFile(file, `${block}\nexport { verified };\n`);
    try {
      ({ verified } = (await import(file)) as { verified: Verified });
    } finally {
      await rm(file, { force: true });
    }
  });

  const raw = Buffer.from(body);
  const fresh = () => signatureHeader(secret, body, Math.floor(Date.now() / 1000));

  test('accepts the service’s signature', () => {
    expect(verified(raw, fresh(), secret)).toBe(true);
  });

  test.each([
    ['a missing header', undefined],
    ['an empty header', ''],
    ['a header without v1', () => fresh().split(',')[0]],
    ['a header without t', () => fresh().split(',')[1]],
    ['a short v1', () => `${fresh().split(',')[0]},v1=abcd`],
    ['a v1 that is not hex', () => `${fresh().split(',')[0]},v1=${'z'.repeat(64)}`],
    ['a t that is not a number', () => fresh().replace(/^t=\d+/, 't=soon')],
    ['an old signature', () => signatureHeader(secret, body, Math.floor(Date.now() / 1000) - 301)],
    ['an array of headers', () => [fresh()]],
  ])('answers false, without throwing, for %s', (_, header) => {
    const value = typeof header === 'function' ? header() : header;
    expect(() => verified(raw, value, secret)).not.toThrow();
    expect(verified(raw, value, secret)).toBe(false);
  });

  test('answers false for another body, another secret, or an empty or missing secret', () => {
    expect(verified(Buffer.from(`${body} `), fresh(), secret)).toBe(false);
    expect(verified(raw, fresh(), 'whsec_another-secret-0123456789')).toBe(false);
    expect(verified(raw, signatureHeader('', body, Math.floor(Date.now() / 1000)), '')).toBe(false);
    expect(verified(raw, fresh(), undefined)).toBe(false);
  });
});
