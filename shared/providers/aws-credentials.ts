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
 * Removes AWS credentials from text an AWS service (or a proxy) sent back: the values of the credential variables,
 * access-key ids, bearer tokens and SigV4 signing fragments. Used by the IAM providers before a message goes into a
 * ProviderFailure (and from there into logs and attempts).
 */
export function redactAwsCredentials(text: string, env: NodeJS.ProcessEnv = process.env): string {
  let out = text;
  for (const source of new Set([env, process.env])) {
    for (const name of SECRET_VARIABLES) {
      const value = source[name];
      // Short values (test placeholders such as "test") would blank ordinary words; real credentials are long.
      if (value && value.length >= 8) out = out.split(value).join('[redacted]');
    }
  }
  return out
    .replace(/\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{12,}\b/g, '[redacted]')
    .replace(/\bBearer\s+\S+/gi, 'Bearer [redacted]')
    .replace(
      /\b(Signature|Credential|X-Amz-Security-Token|X-Amz-Signature|X-Amz-Credential)=[^\s,&"']+/gi,
      '$1=[redacted]',
    );
}
