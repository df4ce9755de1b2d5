#!/usr/bin/env node
/**
 * Keeps package-lock.json installable by `npm ci` everywhere, and lets npm skip other platforms' binaries.
 *
 * Why: packages such as @biomejs/biome, @swc/core, esbuild and sharp list one optional dependency per platform. When
 * the registry in use has no metadata for some of them, `npm install` leaves them out of the lock file, and `npm ci`
 * then refuses the lock as "out of sync" ("Missing: @biomejs/cli-darwin-arm64 from lock file"). This adds an optional
 * entry for each one. An entry must also carry the package's own `os`, `cpu` and `libc` (read here from the
 * registry's manifest of that exact version): without them npm cannot tell the package is for another platform and
 * `npm ci` installs every platform's binary (1.1 GB of them, issue 26).
 *
 * Usage: `node scripts/complete-lockfile.mjs` (fix in place) or `--check` (exit 1 when an entry is missing or its
 * platform fields differ from the manifest's). A manifest the registry cannot serve is reported, not guessed.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const PLATFORM_FIELDS = ['os', 'cpu', 'libc'];
const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages ?? {};
const problems = [];

/** Every platform candidate: an optional dependency of some package, with the lock path that satisfies it. */
const candidates = new Map();
for (const [path, info] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(info.optionalDependencies ?? {})) {
    // npm resolves a dependency from the nearest node_modules upward; a hoisted copy satisfies it too.
    const nested = path ? `${path}/node_modules/${name}` : `node_modules/${name}`;
    const at = packages[nested] ? nested : `node_modules/${name}`;
    if (!packages[at]) {
      problems.push(`missing ${name}`);
      packages[at] = { version, optional: true, ...(info.dev ? { dev: true } : {}) };
    }
    candidates.set(at, name);
  }
}

const registry = execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).trim().replace(/\/?$/, '/');

/** The platform fields of `name@version` as its manifest says, or undefined when the registry cannot serve it. */
async function platformOf(name, version) {
  try {
    const response = await fetch(`${registry}${name.replace('/', '%2F')}/${version}`, {
      signal: AbortSignal.timeout(20_000),
    });
    if (!response.ok) return undefined;
    const manifest = await response.json();
    return Object.fromEntries(PLATFORM_FIELDS.filter((f) => manifest[f]).map((f) => [f, manifest[f]]));
  } catch {
    return undefined;
  }
}

const unread = [];
const entries = [...candidates];
// A few requests at a time: dozens of small manifests, each a round trip.
for (let i = 0; i < entries.length; i += 8) {
  await Promise.all(
    entries.slice(i, i + 8).map(async ([at, name]) => {
      const entry = packages[at];
      const platform = await platformOf(name, entry.version);
      if (platform === undefined) {
        unread.push(`${name}@${entry.version}`);
        return;
      }
      for (const field of PLATFORM_FIELDS) {
        if (JSON.stringify(entry[field]) === JSON.stringify(platform[field])) continue;
        problems.push(`${name}: ${field} ${JSON.stringify(entry[field])} → ${JSON.stringify(platform[field])}`);
        if (platform[field] === undefined) delete entry[field];
        else entry[field] = platform[field];
      }
    }),
  );
}

if (unread.length > 0) {
  console.warn(`could not read ${unread.length} manifests from ${registry} (left as they are): ${unread.join(', ')}`);
}
if (process.argv.includes('--check')) {
  if (problems.length > 0) {
    console.error(`package-lock.json is incomplete (${problems.length}): ${problems.slice(0, 5).join('; ')}, …`);
    console.error('Run `node scripts/complete-lockfile.mjs` and commit the lock file.');
    process.exit(1);
  }
  console.log(`lock file complete (${candidates.size} platform packages checked)`);
  process.exit(0);
}
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(problems.length > 0 ? `fixed ${problems.length} entries` : 'lock file already complete');
