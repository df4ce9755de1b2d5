/**
 * Resource names (tables, bucket, queue URL) come from environment variables set by the stack's grant-and-env binding
 * (lib/bind.ts). Kept apart from config.ts, which re-exports it, so a module that needs only a resource name (the
 * authorizer's key store) does not bundle zod and the service configuration with it.
 */

/** Reads a resource name (table, bucket, queue URL) from its environment variable, failing loudly when absent. */
export function resourceName(envVar: string): string {
  const value = process.env[envVar];
  if (value === undefined || value === '') {
    throw new Error(`Missing required environment variable ${envVar}`);
  }
  return value;
}
