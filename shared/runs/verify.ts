/**
 * Verify: QA metadata on a completed run. The current verification is kept on the run (for the dashboard); every
 * verification is also appended to the Verifications table (the history), and the usage counters move with it, in one
 * transaction, with the accuracy counters (store/quality.ts). Corrections must fit the run's fields (corrections.ts);
 * nothing is written otherwise. Status never changes.
 * A verify clears a needed review in that same write: `review.needed` becomes false (the reasons stay: what the
 * reviewer was asked to check; who and when is the verification itself) and the run leaves the review queue.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import { config } from '../config.js';
import type { Verification, VerifyRequest, VerifyResponse } from '../contract.js';
import { NotFoundError, RunNotCompletedError } from '../errors.js';
import { tables } from '../infra/resources.js';
import { resource } from '../resource-name.js';
import { qualityUpdates } from '../store/quality.js';
import { withResult } from '../store/run-results.js';
import { getRunForTenant, type RunRecord, runsTable } from '../store/runs.js';
import { failedConditions, transactWriteNamed } from '../store/transact.js';
import { countedCondition, usageUpdates, verifiedDelta } from '../store/usage.js';
import { checkCorrections } from './corrections.js';

const verificationsTable = resource(tables.verifications.envVar);

/** Reviews of one run at the same moment that all get through (two reviewers, a double click, a retrying client). */
const VERIFY_ATTEMPTS = 25;

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
  const verification: Verification = {
    accepted: request.accepted,
    corrections: request.corrections ?? {},
    note: request.note ?? null,
    verifiedAt: now.toISOString(),
    verifiedBy: reviewer.keyId,
    ...(reviewer.keyLabel ? { verifiedByLabel: reviewer.keyLabel } : {}),
  };
  // Optimistic: the usage counters change by the difference from the verification read, so the write is conditional
  // on it still being the current one; a concurrent verification makes this one read again, after a short random
  // pause. Each lost race is another review written, so N reviews at once need at most N tries.
  for (let attempt = 0; attempt < VERIFY_ATTEMPTS; attempt++) {
    if (attempt > 0) await setTimeout(Math.random() * Math.min(100, 5 * 2 ** attempt));
    const run = await getRunForTenant(jobId, tenantId);
    if (!run) throw new NotFoundError('run', jobId);
    if (run.status !== 'completed') throw new RunNotCompletedError(jobId, run.status);
    // The fields a correction may name are the schema's, or for a run without one its result's (which may be in parts).
    if (attempt === 0 && request.corrections !== undefined) {
      checkCorrections(
        run.task.fields || run.task.outputFormat === 'text' ? run : await withResult(run),
        request.corrections,
      );
    }
    // The accuracy counters compare corrections with the values the run gave: the whole result, from its parts if need be.
    const whole = run.resultParts ? await withResult(run) : run;
    if (await writeVerification(whole, verification, now)) return { jobId, status: run.status, verification };
  }
  throw new Error(`run ${jobId} kept changing while being verified`);
}

/** One conditional write of the verification; false when the run changed since it was read. */
async function writeVerification(run: RunRecord, verification: Verification, now: Date): Promise<boolean> {
  const counted = countedCondition(run);
  const seen = run.verificationCount ?? 0;
  // The review as read is the one this write replaces: the condition on verificationCount guards it as well (only a
  // verify changes a settled run's review).
  const clearsReview = run.review?.needed === true;
  const items = {
    run: {
      Update: {
        TableName: runsTable(),
        Key: { jobId: run.jobId },
        UpdateExpression: clearsReview
          ? 'SET verification = :v, verificationCount = :next, qualityCounted = :true, #review.#needed = :notNeeded REMOVE reviewTenant'
          : 'SET verification = :v, verificationCount = :next, qualityCounted = :true',
        ConditionExpression: `#status = :completed AND tenantId = :tenant AND ${counted.expression} AND ${
          seen === 0 ? 'attribute_not_exists(verificationCount)' : 'verificationCount = :seen'
        }`,
        ExpressionAttributeNames: {
          '#status': 'status',
          ...(clearsReview ? { '#review': 'review', '#needed': 'needed' } : {}),
        },
        ExpressionAttributeValues: {
          ...counted.values,
          ':v': verification,
          ':next': seen + 1,
          ':true': true,
          ':completed': 'completed',
          ':tenant': run.tenantId,
          ...(seen === 0 ? {} : { ':seen': seen }),
          ...(clearsReview ? { ':notNeeded': false } : {}),
        },
      },
    },
    history: {
      Put: {
        TableName: verificationsTable(),
        Item: {
          jobId: run.jobId,
          verificationId: `${verification.verifiedAt}#${randomUUID()}`,
          tenantId: run.tenantId,
          ...verification,
          expiresAtEpoch: Math.floor(now.getTime() / 1000) + config.runRetentionDays * 86400,
        },
      },
    },
    usage: usageUpdates(run, verifiedDelta(run.verification, verification)),
    // Accuracy from reviews (GET /v1/quality): by the difference from the review this one replaces, as usage is. A
    // review from before the counters (no `qualityCounted`) was never counted: nothing of it is taken away.
    quality: qualityUpdates(run, run.qualityCounted ? run.verification : undefined, verification),
  };
  try {
    await transactWriteNamed(items);
    return true;
  } catch (error: unknown) {
    if (failedConditions(error, items).has('run')) return false;
    throw error;
  }
}
