/** Stops the local stacks started by globalSetup (SIGTERM; each stops its DynamoDB Local and fauxqs itself). */
import type { RunningStack } from './stack.js';

export default async function globalTeardown(): Promise<void> {
  const stacks = (globalThis as { __visionStacks?: RunningStack[] }).__visionStacks ?? [];
  await Promise.all(stacks.map((s) => s.stop()));
}
