/** Stops the local stack if globalSetup started one (an external deployment is left alone). */
import type { RunningStack } from '../integration/stack.ts';

export default async function globalTeardown(): Promise<void> {
  const stack = (globalThis as { __visionE2eStack?: RunningStack }).__visionE2eStack;
  await stack?.stop();
}
