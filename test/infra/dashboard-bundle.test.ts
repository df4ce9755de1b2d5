/**
 * The deployed dashboard: the `dashboard` function is really bundled (esbuild, as `cdk synth` does) with dashboard/
 * copied next to its handler, and that bundle, loaded by a fresh Node process as Lambda would, serves the page under
 * a stage prefix and refuses paths outside the folder.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { PROJECT_ROOT, VisionFunction } from '../../lib/vision-function.js';

const run = promisify(execFile);
let outdir: string;
let assetDir: string;

beforeAll(() => {
  outdir = mkdtempSync(path.join(tmpdir(), 'vision-dashboard-synth-'));
  const app = new App({ outdir });
  const stack = new Stack(app, 'DashboardBundle');
  new VisionFunction(stack, 'Dashboard', { handler: 'dashboard' });
  const code = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function'))[0] as {
    Properties: { Code: { S3Key: string } };
  };
  app.synth();
  assetDir = path.join(outdir, `asset.${code.Properties.Code.S3Key.replace(/\.zip$/, '')}`);
}, 120_000);

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

test('the bundle holds the handler and every file of dashboard/', () => {
  expect(readdirSync(assetDir).sort()).toEqual(['dashboard', 'index.mjs', 'index.mjs.map']);
  const source = readdirSync(path.join(PROJECT_ROOT, 'dashboard')).sort();
  expect(readdirSync(path.join(assetDir, 'dashboard')).sort()).toEqual(source);
  for (const name of source) {
    expect(readFileSync(path.join(assetDir, 'dashboard', name), 'utf8')).toBe(
      readFileSync(path.join(PROJECT_ROOT, 'dashboard', name), 'utf8'),
    );
  }
});

test('the bundled handler serves the page and its script under a stage, and nothing outside dashboard/', async () => {
  const script = `
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'dashboard';
    const { handler } = await import(${JSON.stringify(path.join(assetDir, 'index.mjs'))});
    const event = (asset, path) => ({ httpMethod: 'GET', headers: {}, body: null, queryStringParameters: null,
      pathParameters: asset ? { asset } : null, requestContext: { requestId: 'r-1', path } });
    const context = { getRemainingTimeInMillis: () => 3000 };
    const answers = [];
    for (const [asset, path] of [[null, '/prod/'], [null, '/prod'], ['app.js', '/prod/dashboard/app.js'], ['../index.mjs', '/prod/dashboard/..%2Findex.mjs']]) {
      const r = await handler(event(asset, path), context);
      answers.push({ status: r.statusCode, type: r.headers['content-type'], location: r.headers.location ?? null, html: /<html/i.test(r.body), csp: r.headers['content-security-policy'] });
    }
    console.log(JSON.stringify(answers));`;
  // The variables the stack gives the function (its bucket's regional host, for the CSP), nothing else.
  const domain = 'vision-prod-uploads.s3.eu-west-1.amazonaws.com';
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH ?? '', AWS_REGION: 'eu-west-1', UPLOADS_BUCKET_DOMAIN: domain },
    timeout: 60_000,
  });
  const answers = JSON.parse(stdout) as { csp?: string }[];
  // The page, its redirect and its script: previews may come from that bucket's host alone.
  for (const answer of answers.slice(0, 3)) expect(answer.csp).toContain(`frame-src https://${domain};`);
  expect(answers.map(({ csp: _csp, ...rest }) => rest)).toEqual([
    { status: 200, type: 'text/html; charset=utf-8', location: null, html: true },
    { status: 301, type: undefined, location: '/prod/', html: false },
    { status: 200, type: 'text/javascript; charset=utf-8', location: null, html: false },
    { status: 404, type: 'application/json; charset=utf-8', location: null, html: false },
  ]);
});
