/**
 * The local stack's event-source runner behaves like Lambda's SQS event source mapping: successful records are
 * deleted, reported failures reappear after the visibility timeout, and after maxReceiveCount the queue's redrive
 * policy moves them to the DLQ. Runs against a private fauxqs instance (not the shared stack).
 */
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { startFauxqs } from 'fauxqs';
import { startWorkerRunner } from '../../scripts/local/worker-runner.js';

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('local SQS event source runner', () => {
  let server: Awaited<ReturnType<typeof startFauxqs>>;
  let sqs: SQSClient;
  let previousEndpoint: string | undefined;

  beforeAll(async () => {
    server = await startFauxqs({ port: 0, logger: false });
    previousEndpoint = process.env.AWS_ENDPOINT_URL_SQS;
    process.env.AWS_ENDPOINT_URL_SQS = server.address;
    sqs = new SQSClient({ endpoint: server.address, useQueueUrlAsEndpoint: false });
  });

  afterAll(async () => {
    process.env.AWS_ENDPOINT_URL_SQS = previousEndpoint;
    sqs.destroy();
    await server.stop();
  });

  test('deletes succeeded records, redelivers failed ones, and dead-letters them after maxReceiveCount', async () => {
    const dlq = await sqs.send(new CreateQueueCommand({ QueueName: 'runner-dlq' }));
    const dlqArn = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }))
    ).Attributes?.QueueArn;
    const queue = await sqs.send(
      new CreateQueueCommand({
        QueueName: 'runner-main',
        Attributes: {
          VisibilityTimeout: '1',
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 3 }),
        },
      }),
    );
    const seen: { body: string; receiveCount: string }[] = [];
    const runner = startWorkerRunner({
      queueUrl: queue.QueueUrl ?? '',
      queueArn: 'arn:aws:sqs:us-east-1:000000000000:runner-main',
      batchSize: 10,
      timeoutSeconds: 5,
      concurrency: 1,
      handler: async (event: SQSEvent) => {
        for (const r of event.Records) seen.push({ body: r.body, receiveCount: r.attributes.ApproximateReceiveCount });
        return {
          batchItemFailures: event.Records.filter((r) => r.body === 'bad').map((r) => ({
            itemIdentifier: r.messageId,
          })),
        };
      },
    });
    try {
      await sqs.send(new SendMessageCommand({ QueueUrl: queue.QueueUrl, MessageBody: 'good' }));
      await sqs.send(new SendMessageCommand({ QueueUrl: queue.QueueUrl, MessageBody: 'bad' }));
      const dead = await until('the bad message in the DLQ', async () => {
        const out = await sqs.send(new ReceiveMessageCommand({ QueueUrl: dlq.QueueUrl, WaitTimeSeconds: 0 }));
        return out.Messages?.[0];
      });
      expect(dead.Body).toBe('bad');
      expect(seen.filter((s) => s.body === 'good')).toHaveLength(1);
      expect(seen.filter((s) => s.body === 'bad').map((s) => s.receiveCount)).toEqual(['1', '2', '3']);
    } finally {
      await runner.stop();
    }
  });

  test('an idle runner stops at once: its waiting receive is ended, not waited out', async () => {
    const queue = await sqs.send(new CreateQueueCommand({ QueueName: 'runner-idle' }));
    const runner = startWorkerRunner({
      queueUrl: queue.QueueUrl ?? '',
      queueArn: 'arn:aws:sqs:us-east-1:000000000000:runner-idle',
      batchSize: 10,
      timeoutSeconds: 5,
      concurrency: 2,
      handler: async () => ({ batchItemFailures: [] }),
    });
    // Both pollers are in a receive that would wait 20 s for a message; stopping must not wait for it to end.
    await new Promise((r) => setTimeout(r, 500));
    const waitedOut = new Promise<'waited out'>((resolve) => setTimeout(() => resolve('waited out'), 10_000).unref());
    expect(await Promise.race([runner.stop().then((left) => `stopped, ${left} left`), waitedOut])).toBe(
      'stopped, 0 left',
    );
  });
});
