#!/usr/bin/env node
// Launcher for the `vision` bin: registers tsx's ESM loader (resolved from this package, not from the caller's cwd)
// and runs cli/vision.ts in this same process, so signals and exit codes pass straight through.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('./vision.ts');
await runCli();
