/**
 * Verify: QA metadata on a completed run. The current verification is kept on the run (for the dashboard); every
 * verification is also appended to the Verifications table (the history). Status never changes.
 */
import { randomUUID } from 'node:crypto';
import { config } from '../config.js';
import type { Verification, VerifyRequest, VerifyResponse } from '../contract.js';
import { NotFoundError, RunNotCompletedError } from '../errors.js';
import { tables } from '../infra/resources.js';
import { resource } from '../resource-name.js';
import { getRunForTenant, runsTable } from '../store/runs.js';
import { transactWrite } from '../store/transact.js';

const verificationsTable = resource(tables.verifications.envVar);

/** Who records a review: the key's id, and its label when it has one (shown instead of the id). */
export interface Reviewer {
  keyId: string;
  keyLabel: string;
}

export async function verifyRun(
  tenantId: string,
  reviewer: Reviewer,
  jobId: string,
  request: VerifyRequest,
  now = new Date(),
): Promise<VerifyResponse> {
  const run = await getRunForTenant(jobId, tenantId);
  if (!run) throw new NotFoundError('run', jobId);
  if (run.status !== 'completed') throw new RunNotCompletedError(jobId, run.status);

  const verification: Verification = {
    accepted: request.accepted,
    corrections: request.corrections ?? {},
    note: request.note ?? null,
    verifiedAt: now.toISOString(),
    verifiedBy: reviewer.keyId,
    ...(reviewer.keyLabel ? { verifiedByLabel: reviewer.keyLabel } : {}),
  };
  await transactWrite({
    TransactItems: [
      {
        Update: {
          TableName: runsTable(),
          Key: { jobId },
          UpdateExpression: 'SET verification = :v ADD verificationCount :one',
          ConditionExpression: '#status = :completed AND tenantId = :tenant',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':v': verification,
            ':one': 1,
            ':completed': 'completed',
            ':tenant': tenantId,
          },
        },
      },
      {
        Put: {
          TableName: verificationsTable(),
          Item: {
            jobId,
            verificationId: `${verification.verifiedAt}#${randomUUID()}`,
            tenantId,
            ...verification,
            expiresAtEpoch: Math.floor(now.getTime() / 1000) + config.runRetentionDays * 86400,
          },
        },
      },
    ],
  });
  return { jobId, status: run.status, verification };
}
