/**
 * AWS SDK clients, created once per process (module scope) and reused across invocations. Endpoints come from the
 * SDK's own `AWS_ENDPOINT_URL` / `AWS_ENDPOINT_URL_<SERVICE>` variables, so the same code talks to AWS, LocalStack or
 * the local emulators without branches.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

// Emulators listen on 127.0.0.1, where virtual-hosted bucket names cannot resolve; real S3 uses virtual-hosted style.
const forcePathStyle = process.env.S3_FORCE_PATH_STYLE === 'true';

/** DynamoDB document client; `undefined` attributes are dropped rather than rejected. */
export const ddb = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
});

/** S3 client for reads. */
export const s3 = new S3Client({ forcePathStyle });

/**
 * S3 client for presigning. `WHEN_REQUIRED` stops newer SDKs from signing a checksum of an empty body into the URL,
 * which would make every real PUT fail. A separate endpoint may be given for the address clients see.
 */
export const s3Presigner = new S3Client({
  forcePathStyle,
  requestChecksumCalculation: 'WHEN_REQUIRED',
  ...(process.env.UPLOAD_PUBLIC_ENDPOINT ? { endpoint: process.env.UPLOAD_PUBLIC_ENDPOINT } : {}),
});

/**
 * SQS client. Requests go to the configured endpoint, not the host inside a queue URL: emulators print queue URLs with
 * hostnames that do not resolve, and in AWS the two are the same.
 */
export const sqs = new SQSClient({ useQueueUrlAsEndpoint: false });
