#!/usr/bin/env node
/**
 * Keeps package-lock.json installable by `npm ci` when the npm registry in use serves only some platforms' binaries.
 *
 * Why: packages such as @biomejs/biome, @swc/core, esbuild and sharp list one optional dependency per platform. When
 * the registry (a mirror) has no metadata for the other platforms' packages, `npm install` leaves them out of the lock
 * file, and `npm ci` then refuses the lock as "out of sync" ("Missing: @biomejs/cli-darwin-arm64 from lock file").
 * This adds a minimal optional entry (name and version) for each one; npm skips optional packages it cannot install,
 * and on a full registry it resolves them by version as usual. `npm install` keeps these entries.
 *
 * Usage: `node scripts/complete-lockfile.mjs` (fix in place) or `--check` (exit 1 when entries are missing).
 */
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages ?? {};
const missing = [];

for (const [path, info] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(info.optionalDependencies ?? {})) {
    // npm resolves a dependency from the nearest node_modules upward; a hoisted copy satisfies it too.
    const nested = path ? `${path}/node_modules/${name}` : `node_modules/${name}`;
    if (packages[nested] || packages[`node_modules/${name}`]) continue;
    missing.push(name);
    packages[`node_modules/${name}`] = { version, optional: true, ...(info.dev ? { dev: true } : {}) };
  }
}

if (process.argv.includes('--check')) {
  if (missing.length > 0) {
    console.error(
      `package-lock.json lacks ${missing.length} optional platform packages (${missing.slice(0, 3).join(', ')}, …).`,
    );
    console.error('Run `node scripts/complete-lockfile.mjs` and commit the lock file.');
    process.exit(1);
  }
  process.exit(0);
}
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(missing.length > 0 ? `added ${missing.length} optional platform entries` : 'lock file already complete');
