/**
 * The operator's overrun report: what the service absorbed (completed runs priced above their estimates) per tenant,
 * summed from the daily usage counters (store/usage.ts), next to what the tenants were charged. Operators only: the
 * tenant API never reads `absorbedMicros`. Used by `npm run keys -- absorbed`.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../aws/dynamodb.js';
import type { Micros } from '../money.js';
import { usageTable } from './usage.js';

export interface AbsorbedLine {
  tenantId: string;
  runs: number;
  chargedMicros: Micros;
  absorbedMicros: Micros;
}

/** Per tenant, over the UTC days `from` to `to` (inclusive, `YYYY-MM-DD`), from the day counters (a table scan). */
export async function absorbedByTenant(from: string, to: string): Promise<AbsorbedLine[]> {
  const lines = new Map<string, AbsorbedLine>();
  let start: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(new ScanCommand({ TableName: usageTable(), ExclusiveStartKey: start }));
    for (const item of page?.Items ?? []) {
      const slot = String(item.slot ?? '');
      const day = slot.split('#')[1] ?? '';
      if (!slot.startsWith('d#') || day < from || day > to) continue;
      const tenantId = String(item.tenantId);
      const line = lines.get(tenantId) ?? { tenantId, runs: 0, chargedMicros: 0, absorbedMicros: 0 };
      line.runs += Number(item.runs ?? 0);
      line.chargedMicros += Number(item.chargedMicros ?? 0);
      line.absorbedMicros += Number(item.absorbedMicros ?? 0);
      lines.set(tenantId, line);
    }
    start = page?.LastEvaluatedKey;
  } while (start);
  return [...lines.values()].sort((a, b) => b.absorbedMicros - a.absorbedMicros);
}
