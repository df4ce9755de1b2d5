/**
 * The signature a delivery carries (shared/events/signature.ts) and the SDK's verifyWebhook: a receiver accepts
 * exactly the body the service signed, with the endpoint's secret, within the timestamp tolerance.
 */
import { createHmac } from 'node:crypto';
import { verifyWebhook, WebhookSignatureError } from '../../sdk/index.js';
import { generateWebhookSecret } from '../../shared/events/secrets.js';
import { signatureHeader } from '../../shared/events/signature.js';

const secret = 'whsec_test-secret';
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
  expect(refusal(() => verifyWebhook(body, header, 'whsec_other', { now }))).toBe('mismatch');
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
