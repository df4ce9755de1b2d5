import { redact } from './common.js';

/**
 * IAM providers (bedrock, textract): whether they can be called (AWS credentials or a role are present), and how
 * their error text is cleaned of credentials. A light module (no SDK) because the API handlers' planner needs it too.
 * The local stack fabricates placeholder credentials for its emulators and says so with
 * VISION_DISABLE_IAM_PROVIDERS=true, so they never make real AWS AI services candidates.
 */
export function hasAwsCredentials(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.VISION_DISABLE_IAM_PROVIDERS === 'true') return false;
  return Boolean(
    env.AWS_ACCESS_KEY_ID ||
      env.AWS_PROFILE ||
      env.AWS_WEB_IDENTITY_TOKEN_FILE ||
      env.AWS_CONTAINER_CREDENTIALS_FULL_URI ||
      env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI ||
      env.AWS_LAMBDA_FUNCTION_NAME,
  );
}

/** Environment variables whose values are secrets: never echoed, whatever AWS puts in an error message. */
const SECRET_VARIABLES = [
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_BEARER_TOKEN_BEDROCK',
  'AWS_ACCESS_KEY_ID',
];

/**
 * Removes AWS credentials from text an AWS service (or a proxy) sent back: the values of the credential variables (in
 * `env` and the process environment), and every credential shape `redact` knows (access-key ids, bearer tokens, SigV4).
 */
export function redactAwsCredentials(text: string, env: NodeJS.ProcessEnv = process.env): string {
  const sources = [...new Set([env, process.env])];
  return redact(
    text,
    sources.flatMap((source) => SECRET_VARIABLES.map((name) => source[name])),
  );
}
