/**
 * Settings of the black-box end-to-end suite, all from the environment so the same suite runs against any deployment:
 *
 * - `E2E_BASE_URL` / `E2E_API_KEY`: the API to test (stage path included, e.g. `https://abc.execute-api.eu-west-1.amazonaws.com/prod`)
 *   and a key with the scopes runs:write, runs:read and runs:verify. When both are unset, globalSetup starts the local
 *   stack and sets them (see global-setup.ts).
 * - `E2E_TIMEOUT_MS`: how long a run may take to reach a final state (default 180 s; cold starts on LocalStack are slow).
 * - `E2E_REQUEST_TIMEOUT_MS`: one HTTP request (default 35 s, above API Gateway's 29 s integration timeout).
 * - `E2E_RETRY_MS`: how long a request is retried on 429, 502, 503, 504 or a network error (default 60 s).
 */
export interface E2eConfig {
  baseUrl: string;
  apiKey: string;
  /** `local-stack` when globalSetup started the stack, else `external`. */
  target: 'local-stack' | 'external';
  runTimeoutMs: number;
  requestTimeoutMs: number;
  retryMs: number;
}

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer (ms), got "${raw}"`);
  return value;
}

export function e2eConfig(): E2eConfig {
  const baseUrl = process.env.E2E_BASE_URL?.trim();
  const apiKey = process.env.E2E_API_KEY?.trim();
  if (!baseUrl || !apiKey) {
    throw new Error(
      'E2E_BASE_URL and E2E_API_KEY must both be set (globalSetup sets them when it starts the local stack)',
    );
  }
  return {
    // API Gateway's ApiUrl output ends with "/"; paths below start with "/".
    baseUrl: baseUrl.replace(/\/+$/, ''),
    apiKey,
    target: process.env.E2E_TARGET === 'local-stack' ? 'local-stack' : 'external',
    runTimeoutMs: positiveInt('E2E_TIMEOUT_MS', 180_000),
    requestTimeoutMs: positiveInt('E2E_REQUEST_TIMEOUT_MS', 35_000),
    retryMs: positiveInt('E2E_RETRY_MS', 60_000),
  };
}

/** Jest timeout for a test that makes a few requests (each may be retried up to `retryMs`). */
export function requestTestTimeout(config: E2eConfig, requests = 4): number {
  return requests * config.requestTimeoutMs + config.retryMs + 10_000;
}
