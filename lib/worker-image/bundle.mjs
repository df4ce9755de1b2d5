// Bundles one handler with the esbuild options passed in ESBUILD_OPTIONS (JSON, from lib/vision-function.ts).
// Runs inside the worker image build (lib/worker-image/Dockerfile): node lib/worker-image/bundle.mjs <entry> <outfile>
import { build } from 'esbuild';

const [entry, outfile] = process.argv.slice(2);
if (!entry || !outfile || !process.env.ESBUILD_OPTIONS) {
  throw new Error('usage: ESBUILD_OPTIONS=<json> node bundle.mjs <entry> <outfile>');
}
await build({ ...JSON.parse(process.env.ESBUILD_OPTIONS), entryPoints: [entry], outfile, logLevel: 'warning' });
