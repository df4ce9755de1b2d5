/**
 * The worker's OCR for evidence stops at its configured budget (SERVICE_EVIDENCE_OCR_BUDGET_MS; the suite widens it
 * in test/setup-env.ts, this file narrows it to 1 ms): a value printed only on a scan nobody read stays without a box,
 * the run still completes, and nothing is logged as read. Own file: the configuration is read once per module registry.
 */
import { ENV } from '../../shared/infra/env.js';
import { type LogEntry, setLogSink } from '../../shared/log.js';
import { shutdownLocalProvider } from '../../shared/providers/local/local-provider.js';
import { withEvidence } from '../../shared/worker/grounding.js';
import { modelAnswerOn, SCAN_ONLY_VALUE, TEXT_PAGE_VALUES, textAndScansPdf } from '../support/text-and-scans-pdf.js';

const logged: LogEntry[] = [];
const level = process.env.LOG_LEVEL;
const budget = process.env[ENV.evidenceOcrBudgetMs];

beforeAll(() => {
  process.env[ENV.evidenceOcrBudgetMs] = '1';
  process.env.LOG_LEVEL = 'info';
  setLogSink((entry) => logged.push(entry));
});

afterAll(async () => {
  setLogSink(null);
  for (const [name, value] of [
    ['LOG_LEVEL', level],
    [ENV.evidenceOcrBudgetMs, budget],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await shutdownLocalProvider();
});

test('a 1 ms budget: the scan holding a value is not read, and the run completes without its box', async () => {
  const pdf = await textAndScansPdf();
  const { run, settlement } = modelAnswerOn(pdf, 'run_ocr_budget', { ...TEXT_PAGE_VALUES, ...SCAN_ONLY_VALUE });
  const out = await withEvidence(run, pdf.bytes, settlement, {}, Date.now() + 60_000);

  expect(out.status).toBe('completed');
  const fields = out.status === 'completed' ? (out.fields ?? {}) : {};
  expect(fields.receiptTotal?.bbox).toBeUndefined();
  expect(fields.vendor?.page).toBe(1);
  // Past its deadline before it starts, the evidence OCR reads nothing: no page is logged or counted as read.
  expect(logged.filter((e) => e.message === 'OCR for evidence')).toEqual([]);
});
