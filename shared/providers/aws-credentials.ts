/**
 * Whether IAM providers (bedrock, textract) can be called: AWS credentials or a role are present. A light module (no
 * SDK) because the API handlers' planner needs it too. The local stack fabricates placeholder credentials for its
 * emulators and says so with VISION_DISABLE_IAM_PROVIDERS=true, so they never make real AWS AI services candidates.
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
