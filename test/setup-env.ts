// Environment for tests that import service modules: resource names (read at first use by the stores) and a region.
// Unit tests mock the AWS SDK clients; integration tests overwrite these with the local stack's real values.
import { ENV } from '../shared/infra/env.js';
import { runQueue, tables, uploadsBucket, webhookQueue } from '../shared/infra/resources.js';

process.env.AWS_REGION ??= 'us-east-1';
process.env.AWS_ACCESS_KEY_ID ??= 'test';
process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
process.env[ENV.logLevel] ??= 'silent';
// The dummy credentials above are for mocked clients: they must not make Bedrock/Textract planner candidates.
process.env.VISION_DISABLE_IAM_PROVIDERS ??= 'true';
for (const def of Object.values(tables)) process.env[def.envVar] ??= `test-${def.id}`;
process.env[uploadsBucket.envVar] ??= 'test-uploads';
process.env[uploadsBucket.domainEnvVar] ??= 'test-uploads.s3.us-east-1.amazonaws.com';
process.env[runQueue.envVar] ??= 'https://sqs.us-east-1.amazonaws.com/000000000000/test-runs';
process.env[webhookQueue.envVar] ??= 'https://sqs.us-east-1.amazonaws.com/000000000000/test-webhooks';
process.env[webhookQueue.deadLetter.envVar] ??= 'https://sqs.us-east-1.amazonaws.com/000000000000/test-webhooks-dlq';
process.env[ENV.webhookSecretStore] ??= 'local-table';
// The suite shares a 2-core machine with its own parallel workers (CI too): OCR for evidence runs several times slower
// than on a worker alone, so its time budget (6 s in service) is widened here; what it reads is what the tests check.
process.env[ENV.evidenceOcrBudgetMs] ??= '60000';
