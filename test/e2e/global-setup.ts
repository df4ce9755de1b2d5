/**
 * When E2E_BASE_URL / E2E_API_KEY are not given, starts the local stack (`npm start`'s scripts/local.ts) with one
 * generated dev key and only the `local` provider, and hands its URL and key to the suite through the environment
 * (test workers inherit it). With E2E_BASE_URL set, nothing is started: the suite tests that deployment.
 */
import { randomBytes } from 'node:crypto';
// Jest loads globalSetup through require() without the moduleNameMapper, so this import names the .ts file itself.
import { startStack } from '../integration/stack.ts';

export default async function globalSetup(): Promise<void> {
  const baseUrl = process.env.E2E_BASE_URL?.trim();
  const apiKey = process.env.E2E_API_KEY?.trim();
  if (baseUrl || apiKey) {
    if (!baseUrl || !apiKey) throw new Error('set both E2E_BASE_URL and E2E_API_KEY, or neither (local stack)');
    process.env.E2E_TARGET = 'external';
    process.stdout.write(`\ne2e: testing ${baseUrl}\n`);
    return;
  }
  const key = `vk_e2e_${randomBytes(24).toString('base64url')}`;
  const startTimeout = Number(process.env.E2E_STACK_START_TIMEOUT_MS ?? 180_000);
  const stack = await startStack({ VISION_DEV_API_KEYS: `e2e:${key}`, VISION_PROVIDERS: 'local' }, startTimeout);
  (globalThis as { __visionE2eStack?: unknown }).__visionE2eStack = stack;
  process.env.E2E_BASE_URL = stack.info.baseUrl;
  process.env.E2E_API_KEY = key;
  process.env.E2E_TARGET = 'local-stack';
  process.stdout.write(`\ne2e: started the local stack at ${stack.info.baseUrl}\n`);
}
