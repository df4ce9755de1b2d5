/**
 * `GET /v1/quality` (contract-v1.2 §1): accuracy from reviews over a period, per field, per provider, per day, and
 * calibration over the reviewed values, summed from the counters the verifies wrote (store/quality.ts): O(days ×
 * workflows × schemas × providers) small items read, whatever the number of runs.
 * A period counts the runs created on the UTC days it touches (the counters are per day of a run's creation).
 */
import type { QualityQuery, QualityResponse } from '../contract.js';
import { calibrate } from '../evaluation/calibration.js';
import { round } from '../evaluation/compare.js';
import { CONFIDENCE_LEVELS, type QualityCounts, readQuality } from '../store/quality.js';

const DAY_MS = 86_400_000;
/** The default period: the last 30 days. */
const DEFAULT_DAYS = 30;

type FieldTotals = Map<string, { verified: number; corrected: number }>;

function addFields(into: FieldTotals, counts: QualityCounts): void {
  for (const [name, f] of counts.fields) {
    const total = into.get(name) ?? { verified: 0, corrected: 0 };
    total.verified += f.verified;
    total.corrected += f.corrected;
    into.set(name, total);
  }
}

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
  const to = query.to !== undefined ? new Date(query.to) : now;
  const from = query.from !== undefined ? new Date(query.from) : new Date(to.getTime() - DEFAULT_DAYS * DAY_MS);
  const fromDay = from.toISOString().slice(0, 10);
  const toDay = new Date(to.getTime() - 1).toISOString().slice(0, 10);
  const slices = (await readQuality(tenantId, fromDay, toDay)).filter(
    (s) =>
      (query.workflow === undefined || s.workflow === query.workflow) &&
      (query.schemaId === undefined || s.schemaId === query.schemaId),
  );

  const fields: FieldTotals = new Map();
  const providers = new Map<string, { verifiedRuns: number; fields: FieldTotals }>();
  const days = new Map<string, FieldTotals>();
  const confidence = new Map<number, { right: number; wrong: number }>();
  let verifiedRuns = 0;
  for (const slice of slices) {
    verifiedRuns += slice.counts.verifiedRuns;
    addFields(fields, slice.counts);
    const provider = providers.get(slice.provider) ?? { verifiedRuns: 0, fields: new Map() };
    provider.verifiedRuns += slice.counts.verifiedRuns;
    addFields(provider.fields, slice.counts);
    providers.set(slice.provider, provider);
    const day = days.get(slice.day) ?? new Map();
    addFields(day, slice.counts);
    days.set(slice.day, day);
    for (const [level, c] of slice.counts.confidence) {
      const at = confidence.get(level) ?? { right: 0, wrong: 0 };
      at.right += c.right;
      at.wrong += c.wrong;
      confidence.set(level, at);
    }
  }

  const sum = (totals: FieldTotals) =>
    [...totals.values()].reduce((t, f) => ({ v: t.v + f.verified, c: t.c + f.corrected }), { v: 0, c: 0 });
  const all = sum(fields);
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    verifiedRuns,
    accuracy: share(all.v - all.c, all.v),
    fields: fieldsView(fields),
    providers: Object.fromEntries(
      [...providers]
        .filter(([, p]) => p.verifiedRuns !== 0 || sum(p.fields).v !== 0)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([id, p]) => {
          const t = sum(p.fields);
          return [id, { verifiedRuns: p.verifiedRuns, verified: t.v, corrected: t.c, accuracy: share(t.v - t.c, t.v) }];
        }),
    ),
    calibration: calibrate(
      [...confidence].flatMap(([level, c]) => [
        ...(c.right > 0 ? [{ confidence: level / CONFIDENCE_LEVELS, right: true, weight: c.right }] : []),
        ...(c.wrong > 0 ? [{ confidence: level / CONFIDENCE_LEVELS, right: false, weight: c.wrong }] : []),
      ]),
    ),
    series: [...days]
      .filter(([, f]) => sum(f).v > 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([day, f]) => ({ start: `${day}T00:00:00.000Z`, fields: fieldsView(f) })),
  };
}
