#!/usr/bin/env node
/**
 * Runs after `npm install` / `npm ci` (the root package's postinstall): removes the other platforms' binaries that
 * onnxruntime-node ships inside its one package (288 MB for six platforms; this machine needs ~45 MB of them).
 *
 * Why here: npm skips another platform's binary only when it is its own package with `os`/`cpu` (the lock file
 * records those, scripts/complete-lockfile.mjs); onnxruntime-node bundles them all, so nothing in npm can leave them
 * out. The worker image does the same for linux/arm64 (lib/worker-image/Dockerfile). Missing package: nothing to do.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(root, 'node_modules', 'onnxruntime-node', 'bin');
let removed = 0;
if (existsSync(bin)) {
  // bin/napi-v<N>/<platform>/<arch>/…: the loader reads process.platform and process.arch.
  for (const napi of readdirSync(bin)) {
    for (const platform of readdirSync(path.join(bin, napi))) {
      for (const arch of readdirSync(path.join(bin, napi, platform))) {
        if (platform === process.platform && arch === process.arch) continue;
        rmSync(path.join(bin, napi, platform, arch), { recursive: true, force: true });
        removed += 1;
      }
    }
  }
}
if (removed > 0) console.log(`onnxruntime-node: removed ${removed} other platforms' binaries`);
