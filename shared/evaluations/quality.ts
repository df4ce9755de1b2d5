/**
 * `GET /v1/quality` (contract-v1.2 §1): accuracy from reviews over a period, per field, per provider, per day, and
 * calibration over the reviewed values, summed from the counters the verifies wrote (store/quality.ts): one small item
 * per day of the period read, whatever the number of runs (store/quality-read.ts).
 * A period counts the runs created on the UTC days it touches (the counters are per day of a run's creation, so that a
 * later review replaces the earlier one in the same counter), and the answer's `from` and `to` say which days those are.
 */
import type { QualityQuery, QualityResponse } from '../contract.js';
import { askedPeriod } from '../runs/period.js';
import { calibrate } from '../scoring/calibration.js';
import { round } from '../scoring/compare.js';
import { ANY, addCounts, CONFIDENCE_LEVELS, emptyCounts, type QualityCounts } from '../store/quality.js';
import { readQuality } from '../store/quality-read.js';

const DAY_MS = 86_400_000;
/** The default period: the last 30 days. */
const DEFAULT_DAYS = 30;

type FieldTotals = QualityCounts['fields'];

const share = (part: number, whole: number) => (whole === 0 ? null : round(part / whole));

function fieldsView(totals: FieldTotals): QualityResponse['fields'] {
  return Object.fromEntries(
    [...totals]
      .filter(([, f]) => f.verified > 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, f]) => [
        name,
        { verified: f.verified, corrected: f.corrected, accuracy: share(f.verified - f.corrected, f.verified) },
      ]),
  );
}

export async function qualitySummary(
  tenantId: string,
  query: QualityQuery,
  now = new Date(),
): Promise<QualityResponse> {
  const { from, to } = askedPeriod(query, now, DEFAULT_DAYS);
  const fromDay = new Date(from).toISOString().slice(0, 10);
  const toDay = new Date(to - 1).toISOString().slice(0, 10);
  // One item per day: the counters kept for exactly this filter.
  const days = await readQuality(
    tenantId,
    { workflow: query.workflow ?? ANY, schemaId: query.schemaId ?? ANY },
    fromDay,
    toDay,
  );
  const total = emptyCounts();
  for (const day of days) addCounts(total, day.counts);
  let verified = 0;
  let corrected = 0;
  for (const f of total.fields.values()) {
    verified += f.verified;
    corrected += f.corrected;
  }
  return {
    // The period counted: whole UTC days, the first and the last the bounds touch.
    from: `${fromDay}T00:00:00.000Z`,
    to: new Date(Date.parse(`${toDay}T00:00:00.000Z`) + DAY_MS).toISOString(),
    verifiedRuns: total.verifiedRuns,
    accuracy: share(verified - corrected, verified),
    fields: fieldsView(total.fields),
    providers: Object.fromEntries(
      [...total.providers]
        .filter(([, p]) => p.verifiedRuns !== 0 || p.verified !== 0)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([id, p]) => [
          id,
          {
            verifiedRuns: p.verifiedRuns,
            verified: p.verified,
            corrected: p.corrected,
            accuracy: share(p.verified - p.corrected, p.verified),
          },
        ]),
    ),
    calibration: calibrate(
      [...total.confidence].flatMap(([level, c]) => [
        ...(c.right > 0 ? [{ confidence: level / CONFIDENCE_LEVELS, right: true, weight: c.right }] : []),
        ...(c.wrong > 0 ? [{ confidence: level / CONFIDENCE_LEVELS, right: false, weight: c.wrong }] : []),
      ]),
    ),
    series: days
      .filter((day) => [...day.counts.fields.values()].some((f) => f.verified > 0))
      .sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0))
      .map((day) => ({ start: `${day.day}T00:00:00.000Z`, fields: fieldsView(day.counts.fields) })),
  };
}
