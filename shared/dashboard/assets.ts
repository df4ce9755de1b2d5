/**
 * The review dashboard's static files (dashboard/ in the repository): found, typed and cached for the `dashboard`
 * handler. Deployed, CDK copies the folder next to the bundled handler (lib/vision-function.ts); from source it is
 * two levels up from this file. Only flat file names with a known type are served, so a path can never escape it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { uploadsBucket } from '../infra/resources.js';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Where previews load from (CSP sources): the origin of the presigned read addresses. Locally that is the S3 endpoint
 * the functions are given (on LocalStack, presumably the AWS_ENDPOINT_URL it sets; unverified); in AWS the uploads
 * bucket's own regional host (UPLOADS_BUCKET_DOMAIN, which presigning uses too), never all of amazonaws.com: any
 * bucket there would do for a page that smuggled an address in.
 */
export function storageOrigin(env: NodeJS.ProcessEnv = process.env): string {
  const endpoint = env.UPLOAD_PUBLIC_ENDPOINT || env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL;
  if (endpoint) return new URL(endpoint).origin;
  const domain = env[uploadsBucket.domainEnvVar];
  // At the function's init (dashboardHeaders): a deployment without the binding fails its cold start, loudly.
  if (!domain) throw new Error(`Missing required environment variable ${uploadsBucket.domainEnvVar}`);
  return `https://${domain}`;
}

/**
 * The page talks only to its own origin; previews (images, PDFs in a frame) load from the storage origin only. No
 * inline script or style anywhere.
 */
export function dashboardHeaders(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const storage = storageOrigin(env);
  return {
    'content-security-policy':
      `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: ${storage}; ` +
      `frame-src ${storage}; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    'x-content-type-options': 'nosniff',
    // The page never sends its address (or anything in it) to the storage origin it previews from.
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-cache',
  };
}

export interface DashboardAsset {
  contentType: string;
  text: string;
}

/** The folder holding index.html: next to the bundle when deployed, else the repository's dashboard/. */
export function dashboardDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, 'dashboard'), join(here, '..', '..', 'dashboard')];
  const found = candidates.find((dir) => existsSync(join(dir, 'index.html')));
  if (!found) throw new Error(`dashboard/index.html not found (looked in ${candidates.join(', ')})`);
  return found;
}

let cache: Map<string, DashboardAsset> | undefined;

function load(): Map<string, DashboardAsset> {
  const dir = dashboardDir();
  const assets = new Map<string, DashboardAsset>();
  for (const name of readdirSync(dir)) {
    const type = CONTENT_TYPES[name.slice(name.lastIndexOf('.'))];
    if (type && /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) {
      assets.set(name, { contentType: type, text: readFileSync(join(dir, name), 'utf8') });
    }
  }
  return assets;
}

/** A file of the dashboard by its flat name (e.g. `app.js`), or null. Read once per Lambda instance; re-read locally so edits show on reload. */
export function dashboardAsset(name: string): DashboardAsset | null {
  const assets = cache ?? load();
  if (process.env.AWS_LAMBDA_FUNCTION_NAME) cache = assets;
  return assets.get(name) ?? null;
}
