/**
 * Resource names (tables, bucket, queue URL) from the environment variables lib/bind.ts sets with each grant, read at
 * first use and kept. Nothing reads them at import, so scripts and tests can import first and set the environment
 * after; a Lambda entry point calls `checkEnvironment()` at init so a missing binding still fails the cold start
 * (docs/decisions.md#environment-read-at-first-use). Apart from config.ts so that a module needing only a name (the
 * authorizer's key store) does not bundle zod.
 */

/** Reads a resource name from its environment variable now, failing loudly when absent. */
export function resourceName(envVar: string): string {
  const value = process.env[envVar];
  if (value === undefined || value === '') {
    throw new Error(`Missing required environment variable ${envVar}`);
  }
  return value;
}

/** What the modules loaded so far need from the environment, checked by `checkEnvironment`. */
const initChecks = new Set<() => unknown>();

/** Adds a check that `checkEnvironment` runs (config.ts adds its own). */
export function checkAtInit(check: () => unknown): void {
  initChecks.add(check);
}

/**
 * A resource name, read from `envVar` at first use and kept. `checkEnvironment` resolves it too, unless
 * `checkAtInit` is false: for modules that some functions load without the grant (they never call it).
 */
export function resource(envVar: string, options: { checkAtInit?: boolean } = {}): () => string {
  let value: string | undefined;
  const name = (): string => {
    value ??= resourceName(envVar);
    return value;
  };
  if (options.checkAtInit !== false) checkAtInit(name);
  return name;
}

/**
 * Resolves every resource name and setting the loaded modules declared, throwing with the variable's name when one
 * is missing or malformed. Each functions/* module calls it once, at init, after its imports.
 */
export function checkEnvironment(): void {
  for (const check of initChecks) check();
}
