/**
 * A tenant's runs as `GET /v1/usage` reads them, served from a mocked DynamoDB document client: the Usage table's
 * counters are built by the service's own writer (`usageUpdates` of each run's whole contribution, with ADD applied
 * here), and the Runs table's byTenant / byTenantWorkflow queries answer the partial hours at a period's edges.
 */
import { QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { AwsStub } from 'aws-sdk-client-mock';
import type { RunRecord } from '../../shared/store/runs.js';
import { runContribution, usageUpdates } from '../../shared/store/usage.js';
import { tableName } from './aws.js';

type Item = Record<string, unknown>;

/** The Usage items of these runs, as the service's writer's ADDs leave them (also seeds the usage benchmark). */
export function counterItems(runs: readonly RunRecord[]): Item[] {
  const slots = new Map<string, Item>();
  for (const run of runs) {
    for (const update of usageUpdates({ ...run, usageCounted: true }, runContribution(run)) ?? []) {
      const key = update.Update?.Key as { tenantId: string; slot: string };
      const values = update.Update?.ExpressionAttributeValues ?? {};
      const item: Item = slots.get(`${key.tenantId}|${key.slot}`) ?? { ...key, workflow: values[':workflow'] };
      for (const [name, value] of Object.entries(values)) {
        if (name !== ':workflow') item[name.slice(1)] = Number(item[name.slice(1)] ?? 0) + Number(value);
      }
      slots.set(`${key.tenantId}|${key.slot}`, item);
    }
  }
  return [...slots.values()];
}

// biome-ignore lint/suspicious/noExplicitAny: the mock's client type parameters do not matter here
export function serveUsage(ddb: AwsStub<any, any, any>, runs: readonly RunRecord[]): void {
  const counters = counterItems(runs);
  ddb.on(QueryCommand).callsFake((input: QueryCommandInput) => {
    const v = input.ExpressionAttributeValues ?? {};
    if (input.TableName === tableName('usage')) {
      const items = counters
        .filter((i) => i.tenantId === v[':tenant'] && String(i.slot) >= v[':first'] && String(i.slot) <= v[':last'])
        .filter((i) => v[':workflow'] === undefined || i.workflow === v[':workflow']);
      return { Items: items };
    }
    const items = runs.filter(
      (r) =>
        (input.IndexName === 'byTenant' ? r.tenantId : `${r.tenantId}#${r.workflow}`) === v[':pk'] &&
        r.createdAt >= v[':from'] &&
        r.createdAt <= v[':to'],
    );
    return { Items: items };
  });
}

/** The usage queries the service sent, by table. */
// biome-ignore lint/suspicious/noExplicitAny: as above
export function usageQueries(ddb: AwsStub<any, any, any>): {
  counters: QueryCommandInput[];
  runs: QueryCommandInput[];
} {
  const calls: QueryCommandInput[] = ddb.commandCalls(QueryCommand).map((c) => c.args[0].input as QueryCommandInput);
  return {
    counters: calls.filter((q) => q.TableName === tableName('usage')),
    runs: calls.filter((q) => q.TableName === tableName('runs')),
  };
}
