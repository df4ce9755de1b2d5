/**
 * The `accuracy` phase (issue #27, contract-v1.2 §1–2): the 62 real scanned receipts of `shared/datasets/sroie-dev/`
 * (labels mapped company → merchant, date, total) run as one evaluation on the local stack with the local provider:
 * per-field accuracy, AUROC per field, the review catch rate and seconds per receipt; the API's report checked equal to
 * the comparison module's over the same runs, and the money checked exact (Σ run charges + refunds = the hold). The
 * same set then runs through the OpenAI and Anthropic fakes (bench/provider-fakes.ts), each answering one fixed
 * receipt whatever it is sent: that shows the per-provider comparison end to end, and their accuracy means nothing.
 * Then the targets: a report of 1,000 items written by the service's own path (`finishIfDone`: one query of the
 * items, the report, the conditional write) ≤ 2 s, and `GET /v1/quality` p50 ≤ 50 ms with 10,000 verified runs
 * counted (their counters seeded as the verifies' updates add them up).
 * Runs in a child process of its own: the store keeps its table names and client from first use.
 * Over 400 lines: one phase's three parts (the receipts, the provider comparison, the targets) and their one table.
 */
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { BatchWriteCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../shared/aws/dynamodb.js';
import { finishIfDone } from '../shared/evaluations/finish.js';
import { tables } from '../shared/infra/resources.js';
import { calibrate } from '../shared/scoring/calibration.js';
import { scoreDocument } from '../shared/scoring/compare.js';
import { buildReport, type Report, type ScoredItem } from '../shared/scoring/report.js';
import type { EvaluationItemRecord, EvaluationRecord } from '../shared/store/evaluations.js';
import {
  ANY,
  addCounts,
  CONFIDENCE_LEVELS,
  countsOf,
  emptyCounts,
  itemsOfSlice,
  type QualityCounts,
  type QualitySlice,
  qualityUpdates,
  slotKey,
} from '../shared/store/quality.js';
import type { RunRecord } from '../shared/store/runs.js';
import { startStack } from '../test/integration/stack.js';
import { startProviderFakes } from './provider-fakes.js';
import { round, type Summary, summarize } from './stats.js';

const TENANT = 'bench-accuracy';
const KEY = 'vk_bench_accuracy_0123456789abcdef0123';
const DATASET = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../shared/datasets/sroie-dev');
const FIELDS = ['merchant', 'date', 'total'] as const;
const RESULT_PREFIX = 'ACCURACY_RESULT ';

export interface ProviderFigures {
  receipts: number;
  accuracy: number | null;
  perField: Record<string, { accuracy: number | null; auroc: number | null }>;
  failed: number;
  costUsd: number;
  p50LatencyMs: number | null;
}

export interface AccuracyResult {
  receipts: number;
  /** null with BENCH_ACCURACY_PARTS=targets (no receipts run). */
  local:
    | (ProviderFigures & {
        /** Wall time from creation to the report, over the receipts. */
        secondsPerReceipt: number;
        workerConcurrency: number;
        review: Report['review'] & { catchRate: number | null; falseAlarmRate: number | null };
        calibration: Report['calibration'];
        /** The API's report equals buildReport over the runs as GET /v1/runs/{jobId} gives them. */
        reportMatchesModule: boolean;
        /** One settled item (completed or failed) per receipt, none twice, and the report counts each. */
        itemsAccounted: boolean;
        /** Σ run charges + Σ refunds = the hold, and the evaluation's totals are theirs. */
        moneyExact: boolean;
        heldUsd: number;
      })
    | null;
  fakes: Record<string, ProviderFigures>;
  /** Through the fakes: the API's report equals the module's, and every item is accounted for. */
  fakesReportMatchesModule: boolean;
  fakesMoneyExact: boolean;
  report1000: { items: number; computeMs: Summary; serviceMs: Summary };
  quality: {
    verifiedRuns: number;
    counted: number;
    /** The API's calibration equals `calibrate` over the seeded counts (the packed counters read back exactly). */
    calibrationExact: boolean;
    p50Ms: number;
    p90Ms: number;
    floorP50Ms: number;
    /** The same read with a review of a run created today committed before each one (today's snapshot then stale). */
    afterReviewP50Ms: number;
    afterReviewP90Ms: number;
  };
}

interface Receipt {
  name: string;
  file: string;
  expected: Record<string, unknown>;
}

async function receipts(): Promise<Receipt[]> {
  const names = (await readdir(DATASET)).filter((f) => f.endsWith('.jpg')).sort();
  return Promise.all(
    names.map(async (file) => {
      const labels = JSON.parse(await readFile(path.join(DATASET, file.replace(/\.jpg$/, '.json')), 'utf8')) as Record<
        string,
        string
      >;
      return {
        name: file,
        file: path.join(DATASET, file),
        expected: { merchant: labels.company, date: labels.date, total: labels.total },
      };
    }),
  );
}

type Api = <T = Record<string, unknown>>(method: string, route: string, body?: unknown) => Promise<T>;

function apiOf(baseUrl: string): Api {
  return async <T>(method: string, route: string, body?: unknown) => {
    const response = await fetch(`${baseUrl}${route}`, {
      method,
      headers: { 'x-api-key': KEY, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const json = (await response.json()) as T;
    if (response.status >= 300)
      throw new Error(`${method} ${route} answered ${response.status}: ${JSON.stringify(json)}`);
    return json;
  };
}

async function uploadAll(api: Api, list: Receipt[]): Promise<string[]> {
  const ids: string[] = new Array(list.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < list.length) {
        const i = next++;
        const r = list[i] as Receipt;
        const bytes = await readFile(r.file);
        const slot = await api<{ uploadId: string; uploadUrl: string }>('POST', '/v1/uploads/presign', {
          fileName: r.name,
          contentLength: bytes.length,
        });
        const put = await fetch(slot.uploadUrl, {
          method: 'PUT',
          headers: { 'content-type': 'application/octet-stream' },
          body: new Blob([new Uint8Array(bytes)]),
        });
        if (put.status !== 200) throw new Error(`PUT ${r.name}: ${put.status}`);
        ids[i] = slot.uploadId;
      }
    }),
  );
  return ids;
}

interface EvaluationView {
  evaluationId: string;
  status: string;
  estimatedCostUsd: number;
  chargedUsd: number;
  refundedUsd: number;
  progress: { itemsTotal: number; itemsDone: number };
  report?: Report;
  items?: { index: number; jobId: string; provider: string | null; status: string }[];
  nextItemsCursor?: string | null;
}

/** Runs an evaluation to its end; returns it with every item, and the seconds it took. */
async function evaluate(
  api: Api,
  uploads: string[],
  list: Receipt[],
  providers: string[],
  log: (line: string) => void,
): Promise<{ evaluation: EvaluationView; seconds: number }> {
  const started = performance.now();
  const created = await api<{ evaluationId: string }>('POST', '/v1/evaluations', {
    name: `sroie-dev ${providers.join('+')}`,
    schemaId: 'receipt',
    providers,
    confirmCost: true,
    items: list.map((r, i) => ({ uploadId: uploads[i], expected: r.expected })),
  });
  let last = -1;
  for (;;) {
    const e = await api<EvaluationView>('GET', `/v1/evaluations/${created.evaluationId}?itemsLimit=0`);
    if (e.progress.itemsDone !== last && e.progress.itemsDone % 10 === 0) {
      log(`    ${e.progress.itemsDone} of ${e.progress.itemsTotal} runs done`);
      last = e.progress.itemsDone;
    }
    if (e.status !== 'queued') break;
    if (performance.now() - started > 3_600_000) throw new Error('evaluation not done after an hour');
    await new Promise((r) => setTimeout(r, 1000));
  }
  const seconds = (performance.now() - started) / 1000;
  const items: NonNullable<EvaluationView['items']> = [];
  let cursor: string | null | undefined;
  let evaluation: EvaluationView | undefined;
  do {
    evaluation = await api<EvaluationView>(
      'GET',
      `/v1/evaluations/${created.evaluationId}?itemsLimit=1000${cursor ? `&itemsCursor=${cursor}` : ''}`,
    );
    items.push(...(evaluation.items ?? []));
    cursor = evaluation.nextItemsCursor;
  } while (cursor);
  return { evaluation: { ...evaluation, items }, seconds };
}

/** The report the comparison module gives for the runs as the API returns them, and whether the money is exact. */
async function fromRuns(api: Api, evaluation: EvaluationView, list: Receipt[]) {
  const scored: ScoredItem[] = [];
  let charged = 0;
  let refunded = 0;
  for (const item of evaluation.items ?? []) {
    const run = await api<Record<string, unknown>>('GET', `/v1/runs/${item.jobId}`);
    const completed = run.status === 'completed';
    const attempts = (run.attempts as { latencyMs: number; outcome: string; provider: string }[]) ?? [];
    const used = attempts.filter((a) => a.outcome !== 'skipped');
    charged += Math.round(Number(run.chargedUsd) * 1e6);
    refunded += Math.round(Number(run.refundedUsd) * 1e6);
    scored.push({
      jobId: String(run.jobId),
      index: item.index,
      provider: item.provider ?? 'unknown',
      status: completed ? 'completed' : 'failed',
      chargedMicros: Math.round(Number(run.chargedUsd) * 1e6),
      latencyMs: used.length > 0 ? used.reduce((s, a) => s + a.latencyMs, 0) : null,
      reviewNeeded: completed && run.review ? (run.review as { needed: boolean }).needed : null,
      fields: scoreDocument({
        fields: (run.expectedFields as never) ?? null,
        expected: (list[item.index] as Receipt).expected,
        got: completed ? (run.result as Record<string, unknown>) : null,
        evidence: (run.fields as Record<string, { confidence?: number }>) ?? null,
      }),
    });
  }
  const hold = Math.round(evaluation.estimatedCostUsd * 1e6);
  const moneyExact =
    charged + refunded === hold &&
    Math.round(evaluation.chargedUsd * 1e6) === charged &&
    Math.round(evaluation.refundedUsd * 1e6) === refunded;
  return { report: buildReport(scored), scored, moneyExact };
}

/**
 * Every document accounted for on every provider: exactly one item per (document, provider), each settled (completed
 * or failed, never dropped), and the report's runs per provider are those items.
 */
function accounted(evaluation: EvaluationView, documents: number, providers: readonly string[]): boolean {
  const items = evaluation.items ?? [];
  const seen = new Set(items.map((i) => `${i.provider}#${i.index}`));
  const report = evaluation.report as Report | undefined;
  return (
    evaluation.progress.itemsTotal === documents * providers.length &&
    evaluation.progress.itemsDone === evaluation.progress.itemsTotal &&
    items.length === documents * providers.length &&
    seen.size === items.length &&
    providers.every((p) => Array.from({ length: documents }, (_, i) => seen.has(`${p}#${i}`)).every(Boolean)) &&
    items.every((i) => i.status === 'completed' || i.status === 'failed') &&
    providers.every((p) => report?.perProvider[p]?.runs === documents)
  );
}

function figures(report: Report, scored: ScoredItem[], provider: string): ProviderFigures {
  const mine = scored.filter((s) => s.provider === provider);
  const p = report.perProvider[provider];
  const perField: ProviderFigures['perField'] = {};
  for (const field of FIELDS) {
    const values = mine.map((s) => s.fields[field]).filter((f) => f !== undefined);
    const right = values.filter((f) => f.outcome === 'right').length;
    perField[field] = {
      accuracy: values.length ? round(right / values.length, 4) : null,
      auroc: calibrate(
        values
          .filter((f) => f.confidence !== null)
          .map((f) => ({ confidence: f.confidence as number, right: f.outcome === 'right' })),
      ).auroc,
    };
  }
  return {
    receipts: mine.length,
    accuracy: p?.accuracy ?? null,
    perField,
    failed: p?.failed ?? 0,
    costUsd: p?.costUsd ?? 0,
    p50LatencyMs: p?.p50LatencyMs ?? null,
  };
}

/** Times the service's report path for an evaluation of `n` items (scored like the sample), a few times. */
async function report1000(sample: ScoredItem[], n: number, runs: number): Promise<AccuracyResult['report1000']> {
  const evaluationsTable = process.env[tables.evaluations.envVar] as string;
  const itemsTable = process.env[tables.evaluationItems.envVar] as string;
  const items: ScoredItem[] = Array.from({ length: n }, (_, i) => {
    const s = sample[i % sample.length] as ScoredItem;
    return { ...s, jobId: `run_bench_${String(i).padStart(5, '0')}`, index: i };
  });
  const computeMs: number[] = [];
  const serviceMs: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    buildReport(items);
    computeMs.push(performance.now() - t0);
    const evaluationId = `eval_${'b'.repeat(31)}${r}`;
    const now = new Date();
    const record: EvaluationRecord = {
      evaluationId,
      tenantId: TENANT,
      name: 'report of 1,000',
      status: 'queued',
      schemaId: 'receipt',
      task: {
        prompt: 'x',
        outputFormat: 'json',
        fields: null,
        schemaId: 'receipt',
        schemaLabel: 'Receipt',
        promptScaffold: null,
      },
      providers: ['local'],
      workflow: null,
      metadata: {},
      documents: n,
      itemsTotal: n,
      itemsDone: n,
      estimateMicros: 0,
      maxCostMicros: null,
      chargedMicros: 0,
      refundedMicros: 0,
      holdFromCredit: false,
      marginPct: 30,
      createdAt: now.toISOString(),
      materializedAt: now.toISOString(),
      expiresAtEpoch: Math.floor(now.getTime() / 1000) + 86400,
    };
    await ddb.send(new PutCommand({ TableName: evaluationsTable, Item: record }));
    const rows: EvaluationItemRecord[] = items.map((s, n2) => ({
      evaluationId,
      n: n2,
      index: s.index,
      jobId: s.jobId,
      provider: 'local',
      expected: {},
      plan: {} as EvaluationItemRecord['plan'],
      expiresAtEpoch: record.expiresAtEpoch,
      status: s.status,
      reportedProvider: s.provider,
      chargedMicros: s.chargedMicros,
      latencyMs: s.latencyMs,
      reviewNeeded: s.reviewNeeded,
      fields: s.fields,
      settledAt: now.toISOString(),
    }));
    await batchPut(itemsTable, rows);
    const t1 = performance.now();
    const done = await finishIfDone(evaluationId);
    serviceMs.push(performance.now() - t1);
    if (done?.status !== 'completed' || !done.report) throw new Error('the 1,000-item report was not written');
  }
  return { items: n, computeMs: summarize(computeMs), serviceMs: summarize(serviceMs) };
}

async function batchPut(table: string, items: readonly object[]): Promise<void> {
  for (let i = 0; i < items.length; i += 25) {
    let pending = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item: Item as Record<string, unknown> } }));
    while (pending.length > 0) {
      const out = await ddb.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
      pending = (out.UnprocessedItems?.[table] ?? []) as typeof pending;
    }
  }
}

/** The i-th seeded run: three typed fields, one provider of two, confidences spread over the levels. */
function sampleRun(i: number, createdAt: string): RunRecord {
  return {
    tenantId: TENANT,
    workflow: ['receipts', 'expenses', ''][i % 3] || undefined,
    schemaId: 'receipt',
    status: 'completed',
    outputFormat: 'json',
    createdAt,
    attempts: [{ provider: i % 4 === 0 ? 'openai' : 'local', step: 'vision', outcome: 'succeeded', latencyMs: 1 }],
    task: {
      fields: [
        { name: 'merchant', type: 'string', required: true },
        { name: 'date', type: 'date', required: true },
        { name: 'total', type: 'number', required: true },
      ],
    },
    result: { merchant: 'ACME', date: '2026-11-01', total: 10 },
    fields: {
      merchant: { confidence: (i % 1000) / 1000 },
      date: { confidence: ((i * 7) % 1000) / 1000 },
      total: { confidence: ((i * 13) % 1000) / 1000 },
    },
  } as unknown as RunRecord;
}

/** Seeds the accuracy counters of `runs` verified runs (30 days, 3 workflows, 2 providers) and times GET /v1/quality. */
async function qualityRead(baseUrl: string, runs: number, samples: number): Promise<AccuracyResult['quality']> {
  const DAY = 86_400_000;
  const now = Date.now();
  // What the verifies' updates add up to: each run's counts in its four items of its day (store/quality.ts).
  const slices = new Map<string, QualitySlice>();
  for (let i = 0; i < runs; i++) {
    const createdAt = new Date(now - 60_000 - ((i * 7919) % 29) * DAY - (i % 3600) * 1000).toISOString();
    const workflow = ['receipts', 'expenses', ''][i % 3] ?? '';
    const run = sampleRun(i, createdAt);
    const counts: QualityCounts = countsOf(
      run,
      i % 5 === 0 ? { accepted: false, corrections: { total: 11 } } : { accepted: true, corrections: {} },
    );
    const day = createdAt.slice(0, 10);
    for (const slot of [
      slotKey(ANY, ANY, day),
      slotKey(workflow, ANY, day),
      slotKey(ANY, 'receipt', day),
      slotKey(workflow, 'receipt', day),
    ]) {
      const slice = slices.get(slot) ?? { day, counts: emptyCounts() };
      addCounts(slice.counts, counts);
      slices.set(slot, slice);
    }
  }
  // Each run's review moved its counts once: a slot's version is its number of runs.
  await batchPut(
    process.env[tables.quality.envVar] as string,
    [...slices].flatMap(([slot, slice]) => {
      const items = itemsOfSlice(TENANT, slot, slice, slice.counts.verifiedRuns);
      return [items.day, items.counters];
    }),
  );
  const get = async (route: string) => {
    const response = await fetch(`${baseUrl}${route}`, { headers: { 'x-api-key': KEY } });
    const body = (await response.json()) as { verifiedRuns?: number };
    if (response.status !== 200) throw new Error(`${route}: ${response.status}`);
    return body;
  };
  const first = (await get('/v1/quality')) as { verifiedRuns?: number; calibration?: unknown };
  const counted = first.verifiedRuns ?? -1;
  const all = emptyCounts();
  for (const [slot, slice] of slices) if (slot.startsWith(slotKey(ANY, ANY, ''))) addCounts(all, slice.counts);
  const expected = calibrate(
    [...all.confidence].flatMap(([level, c]) => [
      { confidence: level / CONFIDENCE_LEVELS, right: true, weight: c.right },
      { confidence: level / CONFIDENCE_LEVELS, right: false, weight: c.wrong },
    ]),
  );
  const calibrationExact = JSON.stringify(first.calibration) === JSON.stringify(expected);
  const timed = async (route: string) => {
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const t0 = performance.now();
      await get(route);
      times.push(performance.now() - t0);
    }
    return summarize(times);
  };
  const floor = await timed('/v1/schemas');
  const quality = await timed('/v1/quality');
  // Reviews landing between reads (a reviewer at work): each read finds today's histogram moved since its snapshot.
  const afterReview: number[] = [];
  for (let i = 0; i < samples; i++) {
    const run = sampleRun(i, new Date().toISOString());
    const updates = qualityUpdates(run, undefined, { accepted: true, corrections: {} }) ?? [];
    await ddb.send(new TransactWriteCommand({ TransactItems: updates }));
    const t0 = performance.now();
    await get('/v1/quality');
    afterReview.push(performance.now() - t0);
  }
  const reviewed = summarize(afterReview);
  return {
    verifiedRuns: runs,
    counted,
    calibrationExact,
    p50Ms: quality.p50,
    p90Ms: quality.p90,
    floorP50Ms: floor.p50,
    afterReviewP50Ms: reviewed.p50,
    afterReviewP90Ms: reviewed.p90,
  };
}

async function measure(log: (line: string) => void): Promise<AccuracyResult> {
  const list = await receipts();
  const fakes = await startProviderFakes();
  // Every fake answers the first receipt's labels, whatever it is sent: the comparison runs end to end, the accuracy
  // is not the provider's.
  const first = list[0] as Receipt;
  fakes.use({
    answer: { ...first.expected, subtotal: null, tax: null, currency: null },
    textOutput: false,
    pages: 1,
    pageLines: [[String(first.expected.merchant), String(first.expected.date), String(first.expected.total)]],
    expense: [],
  });
  const workerConcurrency = Number(process.env.BENCH_ACCURACY_WORKERS ?? 2);
  const stack = await startStack({
    VISION_DEV_API_KEYS: `${TENANT}:${KEY}`,
    OPENAI_API_KEY: 'sk-bench-accuracy-fake',
    OPENAI_BASE_URL: `${fakes.url}/v1`,
    ANTHROPIC_API_KEY: 'sk-ant-bench-accuracy-fake',
    ANTHROPIC_BASE_URL: fakes.url,
    VISION_DISABLE_IAM_PROVIDERS: 'true',
    LOCAL_RATE_LIMIT_RPS: '100000',
    LOCAL_RATE_LIMIT_BURST: '100000',
    LOCAL_WORKER_CONCURRENCY: String(workerConcurrency),
    LOG_LEVEL: 'warn',
  });
  try {
    for (const [name, def] of Object.entries(tables)) {
      const table = stack.info.resources.tables[name];
      if (table) process.env[def.envVar] = table;
    }
    process.env.AWS_ENDPOINT_URL_DYNAMODB = stack.info.endpoints.dynamodb;
    process.env.AWS_REGION ??= 'us-east-1';
    process.env.AWS_ACCESS_KEY_ID ??= 'local';
    process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
    const api = apiOf(stack.info.baseUrl);

    // BENCH_ACCURACY_PARTS=targets measures only the 1,000-item report and the quality read (for a quick look).
    const only = process.env.BENCH_ACCURACY_PARTS;
    if (only === 'targets') {
      const field = (outcome: 'right' | 'wrong', confidence: number) => ({
        expected: 'x',
        got: 'y',
        outcome,
        score: outcome === 'right' ? 1 : 0.5,
        confidence,
      });
      const sample: ScoredItem[] = Array.from({ length: 62 }, (_, i) => ({
        jobId: `run_sample_${i}`,
        index: i,
        provider: 'local',
        status: 'completed',
        chargedMicros: 260,
        latencyMs: 3000 + i,
        reviewNeeded: i % 3 === 0,
        fields: {
          merchant: field(i % 4 === 0 ? 'wrong' : 'right', (i % 10) / 10),
          date: field('right', 0.9),
          total: field(i % 5 === 0 ? 'wrong' : 'right', (i % 7) / 7),
        },
      }));
      log('  report of 1,000 items (the service path: query, report, conditional write)');
      const r1000 = await report1000(sample, 1000, 5);
      log('  GET /v1/quality with 10,000 verified runs counted');
      const quality = await qualityRead(stack.info.baseUrl, 10_000, 20);
      return {
        receipts: 0,
        local: null,
        fakes: {},
        fakesReportMatchesModule: true,
        fakesMoneyExact: true,
        report1000: r1000,
        quality,
      };
    }
    log(`  uploading ${list.length} receipts`);
    const uploads = await uploadAll(api, list);
    log(`  evaluation on the local provider (${workerConcurrency} worker pollers)`);
    const local = await evaluate(api, uploads, list, ['local'], log);
    const localRuns = await fromRuns(api, local.evaluation, list);
    const report = local.evaluation.report as Report;
    // Deep equality: a report read back from DynamoDB keeps no key order (a map is unordered), the numbers are equal.
    const reportMatchesModule = isDeepStrictEqual(report, localRuns.report);
    if (!reportMatchesModule) {
      log(`  API report:    ${JSON.stringify(report)}`);
      log(`  module report: ${JSON.stringify(localRuns.report)}`);
    }
    log(
      `  ${round(local.seconds, 1)} s; accuracy ${report.accuracy}; report equals the module's: ${reportMatchesModule}`,
    );

    log('  the same set through the OpenAI and Anthropic fakes (their accuracy means nothing)');
    const fake = await evaluate(api, uploads, list, ['openai', 'anthropic'], log);
    const fakeRuns = await fromRuns(api, fake.evaluation, list);
    const fakeReport = fake.evaluation.report as Report;

    log('  report of 1,000 items (the service path: query, report, conditional write)');
    const r1000 = await report1000(localRuns.scored, 1000, 5);
    log('  GET /v1/quality with 10,000 verified runs counted');
    const quality = await qualityRead(stack.info.baseUrl, 10_000, 20);

    const review = report.review;
    return {
      receipts: list.length,
      local: {
        ...figures(report, localRuns.scored, 'local'),
        secondsPerReceipt: round(local.seconds / list.length, 2),
        workerConcurrency,
        review: {
          ...review,
          catchRate: review.wrongRuns ? round(review.wrongFlagged / review.wrongRuns, 4) : null,
          falseAlarmRate: review.rightRuns ? round(review.rightFlagged / review.rightRuns, 4) : null,
        },
        calibration: report.calibration,
        reportMatchesModule,
        itemsAccounted: accounted(local.evaluation, list.length, ['local']),
        moneyExact: localRuns.moneyExact,
        heldUsd: local.evaluation.estimatedCostUsd,
      },
      fakes: {
        openai: figures(fakeReport, fakeRuns.scored, 'openai'),
        anthropic: figures(fakeReport, fakeRuns.scored, 'anthropic'),
      },
      fakesReportMatchesModule:
        isDeepStrictEqual(fakeReport, fakeRuns.report) &&
        accounted(fake.evaluation, list.length, ['openai', 'anthropic']),
      fakesMoneyExact: fakeRuns.moneyExact,
      report1000: r1000,
      quality,
    };
  } finally {
    await stack.stop();
    await fakes.close();
  }
}

/** Runs the phase in a child process; its progress lines go to `log`. */
export async function measureAccuracy(options: { log: (line: string) => void }): Promise<AccuracyResult> {
  const self = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, ['--import', 'tsx', self], { stdio: ['ignore', 'pipe', 'inherit'] });
  let result: AccuracyResult | undefined;
  createInterface({ input: child.stdout }).on('line', (line) => {
    if (line.startsWith(RESULT_PREFIX)) result = JSON.parse(line.slice(RESULT_PREFIX.length)) as AccuracyResult;
    else options.log(line);
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0 || !result) throw new Error(`accuracy child exited with ${code}`);
  return result;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const result = await measure((line) => process.stdout.write(`${line}\n`));
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
}
