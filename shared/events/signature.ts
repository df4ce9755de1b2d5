/**
 * The `Vision-Signature` header (contract-v1.1 §4): `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.
 * The SDK's verifyWebhook (sdk/index.ts) is its other half; the timestamp inside the signed text lets a receiver
 * refuse a replayed delivery.
 */
import { createHmac } from 'node:crypto';

export const SIGNATURE_HEADER = 'Vision-Signature';
export const EVENT_ID_HEADER = 'Vision-Event-Id';

export function signatureHeader(secret: string, rawBody: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${rawBody}`, 'utf8').digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}
