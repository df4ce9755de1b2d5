/** Stops the local stack started by globalSetup (SIGTERM; it stops DynamoDB Local and fauxqs itself). */
import type { RunningStack } from './stack.js';

export default async function globalTeardown(): Promise<void> {
  const stack = (globalThis as { __visionStack?: RunningStack }).__visionStack;
  await stack?.stop();
}
