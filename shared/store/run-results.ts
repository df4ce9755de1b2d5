/**
 * Results too large for the run item. A DynamoDB item is at most 400 KB, and a transcription of a long PDF can be
 * more (200 pages of text ≈ 600 KB). Such a result is written as ordered parts in the RunResults table, in the SAME
 * settlement transaction as the run's final state and the money (store/ledger.ts), so it is exactly-once with them;
 * the run item records how many parts there are, and get-run / list-runs put the result back together.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../aws/dynamodb.js';
import { tables } from '../infra/resources.js';
import { resourceName } from '../resource-name.js';
import type { RunRecord } from './runs.js';

/** A serialized result up to this many UTF-8 bytes stays on the run item (the rest of the item stays well under). */
export const RESULT_INLINE_MAX_BYTES = 200 * 1024;
/** UTF-16 units per part: at most 3 UTF-8 bytes each, so a part item stays under 300 KB. */
const PART_CHARS = 100_000;
/** Most parts one settlement carries: TransactWriteItems allows 4 MB in all, so a result of ~3 MB at most. */
export const RESULT_MAX_PARTS = 10;

// Resolved when used: only the worker writes parts and only get-run / list-runs read them (each has the grant).
const resultsTable = (): string => resourceName(tables.runResults.envVar);

/** The serialized result in parts when it is too large for the run item; null when it fits inline. */
export function splitResult(result: Record<string, unknown>): string[] | null {
  const json = JSON.stringify(result);
  if (Buffer.byteLength(json, 'utf8') <= RESULT_INLINE_MAX_BYTES) return null;
  const parts: string[] = [];
  for (let start = 0; start < json.length; ) {
    let end = Math.min(json.length, start + PART_CHARS);
    // Never split a surrogate pair: each part must be valid UTF-16 on its own to be stored as a string.
    const last = json.charCodeAt(end - 1);
    if (end < json.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    parts.push(json.slice(start, end));
    start = end;
  }
  return parts;
}

/** The settlement's Put items for the parts of a run's result. */
export function resultPartPuts(run: RunRecord, parts: readonly string[]) {
  return parts.map((data, part) => ({
    Put: { TableName: resultsTable(), Item: { jobId: run.jobId, part, data, expiresAtEpoch: run.expiresAtEpoch } },
  }));
}

/** The run with its result in place: read back from its parts when it was stored in parts. */
export async function withResult(run: RunRecord): Promise<RunRecord> {
  if (!run.resultParts) return run;
  const items: { part: number; data: string }[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: resultsTable(),
        KeyConditionExpression: 'jobId = :jobId',
        ExpressionAttributeValues: { ':jobId': run.jobId },
        ConsistentRead: true,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    items.push(...((page.Items ?? []) as { part: number; data: string }[]));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  if (items.length !== run.resultParts) {
    throw new Error(`run ${run.jobId}: ${items.length} result parts stored, ${run.resultParts} expected`);
  }
  const json = items
    .sort((a, b) => a.part - b.part)
    .map((item) => item.data)
    .join('');
  return { ...run, result: JSON.parse(json) as Record<string, unknown> };
}
