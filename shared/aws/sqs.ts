/**
 * The SQS client, created once per process; the endpoint comes from `AWS_ENDPOINT_URL[_SQS]`. Requests go to the
 * configured endpoint, not the host inside a queue URL: emulators print queue URLs whose hostnames do not resolve,
 * and in AWS the two are the same.
 */
import { SQSClient } from '@aws-sdk/client-sqs';

export const sqs = new SQSClient({ useQueueUrlAsEndpoint: false });
