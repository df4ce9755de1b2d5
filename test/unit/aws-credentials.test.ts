import { hasAwsCredentials, redactAwsCredentials } from '../../shared/providers/aws-credentials.js';
import { redact } from '../../shared/providers/common.js';

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

describe('redact (every provider)', () => {
  test('scrubs a Google API key it was not given, by its shape', () => {
    const clean = redact('API key not valid: AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW. Please pass a valid key.', []);
    expect(clean).not.toContain('AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW');
    expect(clean).toContain('Please pass a valid key.');
  });

  test('scrubs before it cuts, so a cut never leaves part of a secret', () => {
    const secret = 'secret-value-0123456789';
    expect(redact(`x${secret}y`, [secret], 10)).toBe('x[redacted…');
  });
});
