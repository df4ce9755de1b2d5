/**
 * Bedrock batch inference in the batch fakes (../batch-fakes.ts): the control plane `bedrock`, which the SDK reaches
 * through AWS_ENDPOINT_URL_BEDROCK. POST /model-invocation-job (S3 input JSONL of {recordId, modelInput}; the
 * reference's patterns for the job name, role ARN and clientRequestToken; the same token answers the same job), GET
 * /model-invocation-job/{jobArn} (Submitted → InProgress → Completed | PartiallyCompleted | Expired), POST
 * …/{jobArn}/stop (Stopped at the next read, the records done so far kept; an ended job: ValidationException);
 * output `<outputUri><jobId>/<input file>.out` lines {recordId, modelInput, modelOutput | error} and
 * `manifest.json.out`, read and written through the fake's storage (a Map, or the local stack's S3:
 * ../batch-fakes-s3.ts). A job of fewer than `bedrockMinRecords` records (100,
 * Bedrock's default quota) is refused (ValidationException).
 */
import { randomUUID } from 'node:crypto';
import type { RecordedRequest, ScriptedResponse } from '../../test/support/fake-server.js';
import {
  type Answered,
  type Batch,
  type BatchItem,
  type FakeContext,
  hasTools,
  jsonl,
  type Route,
  text,
  usageOf,
} from './state.js';

/** Bedrock batch records use the model's InvokeModel format; Nova's: {output: {message}, usage, stopReason}. */
function bedrockOutput(item: BatchItem, outcome: Answered) {
  const usage = usageOf(item, outcome);
  const tool = hasTools(item.body) || (item.body.toolConfig as { tools?: unknown[] } | undefined)?.tools?.length;
  return {
    output: {
      message: {
        role: 'assistant',
        content: tool
          ? [
              {
                toolUse: {
                  toolUseId: `tooluse_${randomUUID().slice(0, 8)}`,
                  name: 'record_result',
                  input: outcome.answer,
                },
              },
            ]
          : [{ text: text(outcome.answer) }],
      },
    },
    stopReason: tool ? 'tool_use' : 'end_turn',
    usage: { inputTokens: usage.input, outputTokens: usage.output, totalTokens: usage.input + usage.output },
  };
}

/** Bedrock's answer to a job under its minimum of records (a 400 ValidationException), or undefined. */
function bedrockTooFewRecords(records: number, minimum: number): ScriptedResponse | undefined {
  if (records >= minimum) return undefined;
  return {
    status: 400,
    headers: { 'x-amzn-errortype': 'ValidationException' },
    json: { message: `The job has ${records} records; the minimum number of records per job is ${minimum}.` },
  };
}

/** A job identifier as GetModelInvocationJob takes it (its ARN, URL-encoded, or its id) → its id. */
const jobIdOf = (identifier: string) => {
  const decoded = decodeURIComponent(identifier);
  return decoded.slice(decoded.lastIndexOf('/') + 1);
};

export function bedrockBatchFake(ctx: FakeContext): { route: Route; ended(batch: Batch): Promise<void> } {
  const { behaviour, storage, batches, submit, poll, cancel, counts, expired, notFound } = ctx;
  async function writeBedrockOutput(batch: Batch): Promise<void> {
    const lines = batch.items.map((item, i) => {
      const result = batch.results?.[i];
      const base = { recordId: item.customId, modelInput: item.body };
      if (result === undefined || result === 'expired') return null;
      return result.kind === 'ok'
        ? { ...base, modelOutput: bedrockOutput(item, result) }
        : { ...base, error: { errorCode: result.status, errorMessage: result.message } };
    });
    const out = `${batch.outputUri}${batch.id}/${batch.inputFile}.out`;
    await storage.write(out, jsonl(lines.filter((l) => l !== null)));
    const c = counts(batch);
    await storage.write(
      `${batch.outputUri}${batch.id}/manifest.json.out`,
      JSON.stringify({
        totalRecordCount: batch.items.length,
        processedRecordCount: c.ok + c.failed,
        successRecordCount: c.ok,
        errorRecordCount: c.failed,
      }),
    );
  }

  /** Jobs by clientRequestToken: the same token creates no second job (CreateModelInvocationJob is idempotent). */
  const bedrockTokens = new Map<string, string>();
  const bedrockArn = (jobId: string) => `arn:aws:bedrock:us-east-1:000000000000:model-invocation-job/${jobId}`;
  const bedrockError = (status: number, type: string, message: string): ScriptedResponse => ({
    status,
    headers: { 'x-amzn-errortype': type },
    json: { message },
  });

  async function bedrock(req: RecordedRequest, path: string): Promise<ScriptedResponse> {
    if (req.method === 'POST' && path === '/model-invocation-job') {
      const body = req.body as {
        jobName?: string;
        roleArn?: string;
        modelId?: string;
        clientRequestToken?: string;
        inputDataConfig?: { s3InputDataConfig?: { s3Uri?: string } };
        outputDataConfig?: { s3OutputDataConfig?: { s3Uri?: string } };
      };
      const inputUri = body?.inputDataConfig?.s3InputDataConfig?.s3Uri;
      const outputUri = body?.outputDataConfig?.s3OutputDataConfig?.s3Uri;
      if (!body?.jobName || !body.roleArn || !body.modelId || !inputUri || !outputUri) {
        return bedrockError(
          400,
          'ValidationException',
          'jobName, roleArn, modelId, input and output S3 URIs are required',
        );
      }
      // The reference's patterns for the job name and the service role.
      if (!/^[a-zA-Z0-9](-*[a-zA-Z0-9+\-.])*$/.test(body.jobName) || body.jobName.length > 63) {
        return bedrockError(400, 'ValidationException', 'jobName does not match its pattern');
      }
      if (!/^arn:aws(-[^:]+)?:iam::([0-9]{12})?:role\/.+$/.test(body.roleArn)) {
        return bedrockError(400, 'ValidationException', 'roleArn is not an IAM role ARN');
      }
      if (
        body.clientRequestToken !== undefined &&
        !/^[a-zA-Z0-9]{1,256}(-*[a-zA-Z0-9]){0,256}$/.test(body.clientRequestToken)
      ) {
        return bedrockError(400, 'ValidationException', 'clientRequestToken does not match its pattern');
      }
      const known = body.clientRequestToken ? bedrockTokens.get(body.clientRequestToken) : undefined;
      if (known !== undefined) return { json: { jobArn: bedrockArn(known) } };
      let input: string;
      try {
        input = await storage.read(inputUri);
      } catch {
        return bedrockError(400, 'ValidationException', 'the input S3 object cannot be read with the role');
      }
      const records = input
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { recordId: string; modelInput: Record<string, unknown> });
      const refused = bedrockTooFewRecords(records.length, behaviour().bedrockMinRecords);
      if (refused) return refused;
      const jobId = randomUUID().replaceAll('-', '').slice(0, 12);
      if (body.clientRequestToken) bedrockTokens.set(body.clientRequestToken, jobId);
      submit(
        'bedrock',
        jobId,
        records.map((r) => ({ provider: 'bedrock', batchId: jobId, customId: r.recordId, body: r.modelInput })),
        {
          outputUri: outputUri.endsWith('/') ? outputUri : `${outputUri}/`,
          inputFile: inputUri.slice(inputUri.lastIndexOf('/') + 1),
          model: body.modelId,
        },
      );
      return { json: { jobArn: bedrockArn(jobId) } };
    }
    const stop = /^\/model-invocation-job\/(.+)\/stop$/.exec(path);
    if (req.method === 'POST' && stop) {
      const batch = batches.get(jobIdOf(stop[1] ?? ''));
      if (!batch) return bedrockError(404, 'ResourceNotFoundException', 'job not found');
      // The records done so far (`doneBeforeExpiry`) keep their output; the others are never processed.
      if (!cancel(batch)) return bedrockError(400, 'ValidationException', 'the job has already ended');
      return { json: {} };
    }
    const status = /^\/model-invocation-job\/(.+)$/.exec(path);
    if (req.method === 'GET' && status) {
      const jobId = jobIdOf(status[1] ?? '');
      const batch = batches.get(jobId);
      if (!batch) return bedrockError(404, 'ResourceNotFoundException', 'job not found');
      const ended = await poll(batch);
      const c = counts(batch);
      return {
        json: {
          jobArn: bedrockArn(jobId),
          jobName: `job-${jobId}`,
          modelId: batch.model ?? '',
          status: !ended
            ? batch.polls === 1
              ? 'Submitted'
              : 'InProgress'
            : batch.cancelled
              ? 'Stopped'
              : expired(batch)
                ? 'Expired'
                : c.failed > 0
                  ? 'PartiallyCompleted'
                  : 'Completed',
          submitTime: batch.createdAt.toISOString(),
          ...(ended ? { endTime: new Date().toISOString() } : {}),
          jobExpirationTime: new Date(batch.createdAt.getTime() + 86_400_000).toISOString(),
          outputDataConfig: { s3OutputDataConfig: { s3Uri: batch.outputUri } },
        },
      };
    }
    return notFound(path);
  }
  return { route: (req, path) => bedrock(req, path), ended: writeBedrockOutput };
}
