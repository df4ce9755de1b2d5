/**
 * Presigned addresses of objects in the uploads bucket, made without an S3 client (whose schema module would weigh
 * ~150 KB in each API handler), and the requests the API handlers send through them (file-url's HEAD, create-run's
 * ranged GETs). Addresses must equal what getSignedUrl with an S3Client makes (test/unit/s3-urls.test.ts);
 * docs/decisions.md#presigned-addresses-without-an-s3-client explains how the host is chosen.
 */
import { formatUrl } from '@aws-sdk/core/util';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { S3RequestPresigner } from '@aws-sdk/s3-request-presigner';
import { Sha256 } from '@smithy/core/checksum';
import { isIpAddress } from '@smithy/core/endpoints';
import { HttpRequest } from '@smithy/core/protocols';
import { ENV } from '../infra/env.js';
import { uploadsBucket } from '../infra/resources.js';
import { resource, resourceName } from '../resource-name.js';

export interface ObjectAddressRequest {
  method: 'GET' | 'HEAD' | 'PUT';
  key: string;
  /** Seconds the address stays valid. */
  expiresIn: number;
  /** Headers the caller must send, all signed (for a PUT: content-type and content-length). */
  headers?: Record<string, string>;
  /** Query parameters S3 reads (response-content-type, ...); signed. */
  query?: Record<string, string>;
  /** The address clients see (UPLOAD_PUBLIC_ENDPOINT, when set) rather than the one the functions use. */
  forClients?: boolean;
  /** Signing time; defaults to now (tests pin it). */
  signingDate?: Date;
}

/** The operation name the SDK puts in `x-id` (S3 ignores it; kept so the addresses equal the SDK's; none on HEAD). */
const OPERATION_ID: Partial<Record<ObjectAddressRequest['method'], string>> = { GET: 'GetObject', PUT: 'PutObject' };

/** The uploads bucket's name (the worker reads objects from it too). */
export const uploadsBucketName = resource(uploadsBucket.envVar);

let presigner: S3RequestPresigner | undefined;

function signer(): S3RequestPresigner {
  if (!presigner) {
    const region = process.env.AWS_REGION || process.env.AWS_DEFAULT_REGION;
    if (!region) throw new Error('Missing required environment variable AWS_REGION');
    // The same credential chain the SDK clients use (in Lambda: the function role's variables).
    presigner = new S3RequestPresigner({ credentials: defaultProvider(), region, sha256: Sha256 });
  }
  return presigner;
}

/** S3's key encoding: every path segment percent-encoded, `/` kept (the SDK's extendedEncodeURIComponent). */
function encodeKey(key: string): string {
  return key
    .split('/')
    .map((segment) =>
      encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
    )
    .join('/');
}

/** A bucket name usable as a DNS label in front of an endpoint's host. */
const VIRTUAL_HOSTABLE = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;

/** Where the object lives: protocol, host, port and path. */
function location(key: string, forClients: boolean): Pick<HttpRequest, 'protocol' | 'hostname' | 'port' | 'path'> {
  const bucket = uploadsBucketName();
  const endpoint =
    (forClients ? process.env[ENV.uploadPublicEndpoint] : undefined) ||
    process.env.AWS_ENDPOINT_URL_S3 ||
    process.env.AWS_ENDPOINT_URL;
  if (!endpoint) {
    // Read per call like the endpoint variables above: which of them applies decides whether the domain is needed.
    return { protocol: 'https:', hostname: resourceName(uploadsBucket.domainEnvVar), path: `/${encodeKey(key)}` };
  }
  const url = new URL(endpoint);
  const base = url.pathname.replace(/\/+$/, '');
  const port = url.port ? Number(url.port) : undefined;
  const pathStyle =
    process.env.S3_FORCE_PATH_STYLE === 'true' || isIpAddress(url.hostname) || !VIRTUAL_HOSTABLE.test(bucket);
  return pathStyle
    ? { protocol: url.protocol, hostname: url.hostname, port, path: `${base}/${bucket}/${encodeKey(key)}` }
    : { protocol: url.protocol, hostname: `${bucket}.${url.hostname}`, port, path: `${base}/${encodeKey(key)}` };
}

/** A presigned address for one object of the uploads bucket. */
export async function presignObject(request: ObjectAddressRequest): Promise<string> {
  const where = location(request.key, request.forClients ?? false);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers ?? {})) headers[name.toLowerCase()] = value;
  const unsigned = new HttpRequest({
    ...where,
    method: request.method,
    headers: { ...headers, host: where.port === undefined ? where.hostname : `${where.hostname}:${where.port}` },
    query: { ...request.query, ...(OPERATION_ID[request.method] ? { 'x-id': OPERATION_ID[request.method] } : {}) },
  });
  const signed = await signer().presign(unsigned, {
    expiresIn: request.expiresIn,
    // The presigner leaves content-type unsigned unless asked; every header given here is part of the contract.
    signableHeaders: new Set(Object.keys(headers)),
    ...(request.signingDate ? { signingDate: request.signingDate } : {}),
  });
  return formatUrl(signed);
}

/** Attempts of a request through a presigned address (the S3 client's standard retry makes 3 as well). */
const ATTEMPTS = 3;
/** How long one attempt may wait for the whole answer, body included. */
const ATTEMPT_TIMEOUT_MS = 5_000;

/**
 * Sends one request to an object through a presigned address (its headers signed), as the S3 client would: network
 * errors, timeouts and 5xx are retried with a short backoff, and the last answer or error stands. A redirect (to a
 * host the address was not signed for) is not followed. The caller reads the status; the body is read into memory.
 */
export async function requestObject(
  request: Pick<ObjectAddressRequest, 'method' | 'key' | 'headers'>,
): Promise<{ status: number; headers: Headers; body: Uint8Array }> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      const url = await presignObject({ ...request, expiresIn: 60 });
      const signal = AbortSignal.timeout(ATTEMPT_TIMEOUT_MS);
      const response = await fetch(url, {
        method: request.method,
        headers: request.headers,
        redirect: 'manual',
        signal,
      });
      const body = new Uint8Array(await response.arrayBuffer());
      if (response.status < 500 || attempt >= ATTEMPTS)
        return { status: response.status, headers: response.headers, body };
    } catch (error: unknown) {
      if (attempt >= ATTEMPTS) {
        throw new Error(`S3 ${request.method} of the upload failed: ${error instanceof Error ? error.message : error}`);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt));
  }
}

/**
 * The headers of an object of the uploads bucket (its user metadata as `x-amz-meta-…`), or null when it does not
 * exist: a HEAD through a presigned address. 404 is "no" (the functions that call this may list the bucket, so S3
 * answers 404, not 403, for a missing key); any answer but 2xx and 404, after the retries of `requestObject`, is an
 * error.
 */
export async function headObject(key: string): Promise<Headers | null> {
  const { status, headers } = await requestObject({ method: 'HEAD', key });
  if (status === 404) return null;
  if (status >= 200 && status < 300) return headers;
  throw new Error(`S3 HEAD of the upload failed: status ${status}`);
}

/** Whether an object of the uploads bucket exists (`headObject`). */
export async function objectExists(key: string): Promise<boolean> {
  return (await headObject(key)) !== null;
}
