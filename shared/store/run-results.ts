/**
 * Results that cannot stay on the run item: too large for it (a DynamoDB item is at most 400 KB, and a transcription
 * of a long PDF can be more: 200 pages of text ≈ 1 MB), or not storable as a DynamoDB map (nested too deep, numbers
 * it cannot hold exactly). Such a result is written as ordered parts in the RunResults table, in the SAME
 * settlement transaction as the run's final state and the money (store/ledger.ts), so it is exactly-once with them;
 * the run item records how many parts there are, and get-run / list-runs put the result back together.
 * A run's per-field evidence (`fields`, contract-v1.1 §3) is as large as its result can be (a box and the source text
 * per value): it stays on the item with the result, or travels with it in the parts (`{result, fields}` as one JSON).
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../aws/dynamodb.js';
import { CORRECTIONS_MAX_BYTES } from '../contract.js';
import type { Fields } from '../fields/types.js';
import { tables } from '../infra/resources.js';
import { jsonProblem, STORED_MAX_DEPTH } from '../json-limits.js';
import { resource } from '../resource-name.js';
import type { RunRecord } from './runs.js';

/** DynamoDB's largest item. */
const ITEM_MAX_BYTES = 400 * 1024;
/**
 * Room a run item keeps after settlement for what is written to it later: the current verification. Its corrections
 * are limited to 64 KiB of JSON, which DynamoDB may count up to twice over (storedBytes: `[[1],[2]]`, lists of small
 * numbers); plus a 2,000-character note (6,000 UTF-8 bytes at most), who and when.
 */
const VERIFICATION_RESERVE_BYTES = 2 * CORRECTIONS_MAX_BYTES + 8 * 1024;
/** A result DynamoDB counts at up to this many bytes stays on the run item, if the rest of the item leaves the room. */
export const RESULT_INLINE_MAX_BYTES = 200 * 1024;
/** UTF-8 bytes of result per part: a part item (its data, key and expiry) stays under DynamoDB's 400 KB. */
const PART_BYTES = 350 * 1024;
/**
 * Most UTF-8 bytes a result may have once serialized: its parts, the run item, the tenant and the ledger entry all
 * travel in the one settlement transaction, and TransactWriteItems carries at most 4 MB.
 */
export const RESULT_MAX_BYTES = 3 * 1024 * 1024;
/**
 * How much longer parts live than their run. DynamoDB's TTL deletes each table's expired items on its own schedule,
 * days late at times, so parts expiring with their run could go before it: a run that still reads would have no
 * result (get-run and list-runs also skip expired runs, store/runs.ts).
 */
const PARTS_OUTLIVE_RUN_SECONDS = 30 * 86400;

// Not checked at init: every module that settles loads this one, but only the worker writes parts and only get-run /
// list-runs read them (each has the grant).
const resultsTable = resource(tables.runResults.envVar, { checkAtInit: false });

/** Whether a result is too large to store at all (the worker fails such a run rather than retry a doomed write). */
export function resultTooLarge(result: Record<string, unknown>): boolean {
  return Buffer.byteLength(JSON.stringify(result), 'utf8') > RESULT_MAX_BYTES;
}

/**
 * The size DynamoDB counts for a value stored as a document attribute
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html): a string its UTF-8
 * bytes, a number 1 byte per two significant digits plus 1, a boolean or null 1 byte, a list or map 3 bytes plus 1 per
 * element plus the elements (and a map's keys). JSON's length understates it for lists of small numbers, by up to
 * half: `[1,2]` is 5 JSON bytes and 9 stored. AWS calls its number rule approximate; numbers are counted here as
 * measured (github.com/zaccharles/dynamodb-calculator): digits in pairs aligned on the decimal point, plus a byte for
 * a negative sign, so `1.5` and `-1` are 3 bytes each.
 */
export function storedBytes(value: unknown): number {
  if (value === null || typeof value === 'boolean') return 1;
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (typeof value === 'number') return numberBytes(value);
  if (Array.isArray(value)) return value.reduce((sum: number, v) => sum + 1 + storedBytes(v), 3);
  if (typeof value === 'object') {
    let sum = 3;
    for (const [key, v] of Object.entries(value)) {
      // The document client drops undefined attributes; they take no room.
      if (v !== undefined) sum += 1 + Buffer.byteLength(key, 'utf8') + storedBytes(v);
    }
    return sum;
  }
  return 0;
}

/** A number as DynamoDB stores it: base-100 digit pairs aligned on the decimal point, a byte more when negative. */
function numberBytes(value: number): number {
  const [mantissa = '0', exponent = '0'] = Math.abs(value).toExponential().split('e');
  const digits = mantissa.replace('.', '').length;
  // The digits occupy decimal positions high..low (10^high first); a pair covers positions 2k+1 and 2k.
  const high = Number(exponent);
  const low = high - digits + 1;
  const pairs = Math.floor(high / 2) - Math.floor(low / 2) + 1;
  return pairs + 1 + (value < 0 ? 1 : 0);
}

/** A completed run's answer as the settlement stores it: the result, and its fields' evidence when it has any. */
export interface StoredAnswer {
  result: Record<string, unknown>;
  fields?: Fields;
}

/** Whether a value can be a DynamoDB map as it is (see splitAnswer). */
const storableAsMap = (value: unknown) =>
  jsonProblem(value, { maxDepth: STORED_MAX_DEPTH, numbers: true }) === undefined;

/**
 * The serialized answer in parts, or null when it stays on the run item: when the result and its fields fit in the
 * room the rest of the item (prompt, task, metadata, the review in `alsoOnItem`, ...) and a later verification leave,
 * counted as DynamoDB counts (storedBytes), and DynamoDB can hold them as maps — at most STORED_MAX_DEPTH levels, no
 * number beyond what it stores exactly, no `__proto__` key. A part is JSON text, which holds any answer: the result
 * alone (as before fields existed), or `{result, fields}` when there are fields (`fieldsInParts`).
 */
export function splitAnswer(
  answer: StoredAnswer,
  run: RunRecord,
  alsoOnItem: unknown = null,
): { parts: string[]; fieldsInParts: boolean } | null {
  const room = Math.min(
    RESULT_INLINE_MAX_BYTES,
    ITEM_MAX_BYTES - VERIFICATION_RESERVE_BYTES - storedBytes(run) - storedBytes(alsoOnItem),
  );
  const { result, fields } = answer;
  const inlineBytes = storedBytes(result) + (fields ? storedBytes(fields) : 0);
  if (storableAsMap(result) && (!fields || storableAsMap(fields)) && inlineBytes <= room) return null;
  const json = Buffer.from(JSON.stringify(fields ? { result, fields } : result), 'utf8');
  const parts: string[] = [];
  for (let start = 0; start < json.length; ) {
    let end = Math.min(json.length, start + PART_BYTES);
    // Never cut inside a character: back up over UTF-8 continuation bytes (10xxxxxx), so each part is valid text.
    while (end < json.length && ((json[end] as number) & 0xc0) === 0x80) end -= 1;
    parts.push(json.subarray(start, end).toString('utf8'));
    start = end;
  }
  return { parts, fieldsInParts: fields !== undefined };
}

/**
 * Whether a result and its fields together are too large for the one settlement transaction. The settlement then
 * stores the result without its fields (grounding never fails a run that would otherwise complete).
 */
export function answerTooLarge(answer: StoredAnswer): boolean {
  return Buffer.byteLength(JSON.stringify(answer), 'utf8') > RESULT_MAX_BYTES;
}

/** The settlement's Put items for the parts of a run's result. */
export function resultPartPuts(run: RunRecord, parts: readonly string[]) {
  const expiresAtEpoch = run.expiresAtEpoch + PARTS_OUTLIVE_RUN_SECONDS;
  return parts.map((data, part) => ({
    Put: { TableName: resultsTable(), Item: { jobId: run.jobId, part, data, expiresAtEpoch } },
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
  if (run.fieldsInParts) {
    const answer = JSON.parse(json) as StoredAnswer;
    return { ...run, result: answer.result, ...(answer.fields ? { fields: answer.fields } : {}) };
  }
  return { ...run, result: JSON.parse(json) as Record<string, unknown> };
}
