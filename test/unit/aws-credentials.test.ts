import { hasAwsCredentials, redactAwsCredentials } from '../../shared/providers/aws-credentials.js';

describe('redactAwsCredentials', () => {
  const env = {
    AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    AWS_SESSION_TOKEN: 'IQoJb3JpZ2luX2VjEXAMPLE',
  };

  test('removes credential values, access key ids, bearer tokens and SigV4 fragments an error may echo', () => {
    const echoed =
      'denied for AKIAIOSFODNN7EXAMPLE with secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY token IQoJb3JpZ2luX2VjEXAMPLE ' +
      'Authorization: Bearer abc.def.ghi Credential=AKIAIOSFODNN7EXAMPLE/20261122/us-east-1/textract/aws4_request, Signature=0123abcd';
    const clean = redactAwsCredentials(echoed, env);
    for (const secret of [
      'AKIAIOSFODNN7EXAMPLE',
      env.AWS_SECRET_ACCESS_KEY,
      env.AWS_SESSION_TOKEN,
      'abc.def.ghi',
      '0123abcd',
    ]) {
      expect(clean).not.toContain(secret);
    }
    expect(clean).toContain('denied for');
  });

  test('leaves ordinary words alone when a credential is a short placeholder', () => {
    expect(redactAwsCredentials('the test failed', { AWS_SECRET_ACCESS_KEY: 'test' })).toBe('the test failed');
  });
});

describe('hasAwsCredentials', () => {
  test('credentials or a role count; the local stack switch turns them off', () => {
    expect(hasAwsCredentials({})).toBe(false);
    expect(hasAwsCredentials({ AWS_ACCESS_KEY_ID: 'x' })).toBe(true);
    expect(hasAwsCredentials({ AWS_LAMBDA_FUNCTION_NAME: 'worker' })).toBe(true);
    expect(hasAwsCredentials({ AWS_ACCESS_KEY_ID: 'x', VISION_DISABLE_IAM_PROVIDERS: 'true' })).toBe(false);
  });
});
