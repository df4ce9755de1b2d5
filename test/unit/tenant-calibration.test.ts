/**
 * Calibration kept per tenant, falling back to the deployment's when a tenant has too few runs of a key, so that one
 * tenant's documents cannot move another's estimates (contract v1.2 §5): the arithmetic (shared/pricing/calibration.ts),
 * the store (shared/store/calibration.ts, DynamoDB mocked at the client) and creation's estimate through it.
 */
import {
  BatchGetCommand,
  type BatchGetCommandInput,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import type { FileFacts } from '../../shared/file-facts.js';
import { calibrationKeysFor } from '../../shared/planning/estimate.js';
import { planRun } from '../../shared/planning/plan.js';
import {
  addSample,
  addTenantEntry,
  CALIBRATION_WINDOW,
  type CalibrationSample,
  type CalibrationState,
  type DeploymentState,
  MIN_SAMPLES,
  seedFor,
  tenantFactors,
} from '../../shared/pricing/calibration.js';
import { calibrationKey } from '../../shared/providers/predict.js';
import { buildTask, registry } from '../../shared/registry/registry.js';
import { clearCalibrationCache, loadFactors, recordSamples, tenantItemKey } from '../../shared/store/calibration.js';
import { conditionalCheckFailed, tableName } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);
const TASK = buildTask({
  prompt: 'Extract',
  outputFormat: 'json',
  schemaId: 'receipt',
  schema: registry.get('receipt'),
});
const KEY = calibrationKey('openai', TASK, 'vision');
const RECEIPT: FileFacts = { mime: 'image/png', kind: 'image', sizeBytes: 13_775, width: 800, height: 834, pages: 1 };

/** A run whose answer was `output` tokens against 100 predicted (input as predicted). */
const sample = (output: number): CalibrationSample => ({
  key: KEY,
  predicted: { input: 1000, output: 100 },
  actual: { input: 1000, output },
});
const own = (outputs: number[]): CalibrationState =>
  outputs.reduce<CalibrationState | undefined>((s, o) => addSample(s, sample(o)), undefined) as CalibrationState;
const deployment = (entries: Array<[string, number]>): DeploymentState =>
  entries.reduce<DeploymentState | undefined>(
    (s, [tenant, o]) => addTenantEntry(s, tenant, sample(o)),
    undefined,
  ) as DeploymentState;

beforeEach(() => {
  ddb.reset();
  clearCalibrationCache();
});

describe('the arithmetic', () => {
  test("a tenant with enough runs of a key is calibrated by its own, whatever the deployment's says", () => {
    const factors = tenantFactors({
      tenant: 'acme',
      own: new Map([[KEY, own(Array(MIN_SAMPLES).fill(100))]]),
      deployment: new Map([[KEY, deployment([['flood', 400]])]]),
    });
    expect(factors(KEY).output).toBeCloseTo(1);
  });

  test("a new tenant starts from the other tenants' entries in the deployment's window", () => {
    const others = deployment(Array.from({ length: 30 }, (_, i): [string, number] => [`t${i}`, 120]));
    const factors = tenantFactors({ tenant: 'acme', own: new Map(), deployment: new Map([[KEY, others]]) });
    expect(factors(KEY).output).toBeCloseTo(1.2);
  });

  test('with few runs of its own, those raise its factor at once; its own entry is not counted twice', () => {
    const others = deployment([
      ...Array.from({ length: 30 }, (_, i): [string, number] => [`t${i}`, 120]),
      ['acme', 300],
    ]);
    const factors = tenantFactors({
      tenant: 'acme',
      own: new Map([[KEY, own([300, 300])]]),
      deployment: new Map([[KEY, others]]),
    });
    // 32 values (30 others, acme's two): the 95th percentile is the 31st smallest, one of acme's own.
    expect(factors(KEY).output).toBeCloseTo(3);
    const once = tenantFactors({
      tenant: 'acme',
      own: new Map([[KEY, own([300])]]),
      deployment: new Map([[KEY, others]]),
    });
    // 31 values with one of acme's: the 30th smallest is another tenant's.
    expect(once(KEY).output).toBeCloseTo(1.2);
  });

  test("a tenant's flood of runs is one entry of the deployment's window: its latest", () => {
    let state: DeploymentState | undefined;
    for (let i = 0; i < 500; i += 1) state = addTenantEntry(state, 'flood', sample(1000));
    expect(state?.entries).toEqual([{ tenant: 'flood', input: 1, output: 10 }]);
    // A new tenant's fallback with that one entry among the seeds: the seed, unmoved.
    const factors = tenantFactors({
      tenant: 'beta',
      own: new Map(),
      deployment: new Map([[KEY, state as DeploymentState]]),
    });
    expect(factors(KEY)).toEqual(seedFor(KEY));
  });

  test('one tenant moves the fallback at most between two values other tenants put there', () => {
    const others = Array.from({ length: 29 }, (_, i): [string, number] => [`t${i}`, 100 + i]);
    const withFlood = (output: number) =>
      tenantFactors({
        tenant: 'beta',
        own: new Map(),
        deployment: new Map([[KEY, deployment([...others, ['flood', output]])]]),
      })(KEY).output;
    // 30 values: the 95th percentile is the 29th smallest. Whatever the flood's value, it stays between the other
    // tenants' 28th and 29th smallest (1.27, 1.28).
    for (const output of [1, 50, 127.5, 1000]) {
      expect(withFlood(output)).toBeGreaterThanOrEqual(1.27);
      expect(withFlood(output)).toBeLessThanOrEqual(1.28);
    }
  });

  test("the deployment's window keeps the most recent tenants", () => {
    const many = deployment(Array.from({ length: CALIBRATION_WINDOW + 5 }, (_, i): [string, number] => [`t${i}`, 100]));
    expect(many.entries).toHaveLength(CALIBRATION_WINDOW);
    expect(many.entries[0]?.tenant).toBe('t5');
  });
});

describe('the store', () => {
  const keys = [KEY];

  test("creation reads the tenant's item and the deployment's of each key in one request, then from its cache", async () => {
    ddb.on(BatchGetCommand).resolves({
      Responses: {
        [tableName('calibration')]: [
          { key: tenantItemKey('acme', KEY), input: Array(20).fill(1), output: Array(20).fill(1.5), version: 3 },
          { key: KEY, entries: [{ tenant: 'other', input: 1, output: 3 }], version: 9 },
        ],
      },
    });
    const factors = await loadFactors('acme', keys, 1_000);
    expect(factors(KEY)).toEqual({ input: 1, output: 1.5 });
    const asked = ddb.commandCalls(BatchGetCommand)[0]?.args[0].input as BatchGetCommandInput;
    expect(asked.RequestItems?.[tableName('calibration')]?.Keys).toEqual([
      { key: KEY },
      { key: tenantItemKey('acme', KEY) },
    ]);
    await loadFactors('acme', keys, 50_000);
    expect(ddb.commandCalls(BatchGetCommand)).toHaveLength(1);
    // A minute later it reads again.
    await loadFactors('acme', keys, 61_001);
    expect(ddb.commandCalls(BatchGetCommand)).toHaveLength(2);
  });

  test("another tenant's window is never read for this tenant", async () => {
    ddb.on(BatchGetCommand).resolves({ Responses: { [tableName('calibration')]: [] } });
    await loadFactors('beta', keys);
    const asked = ddb.commandCalls(BatchGetCommand)[0]?.args[0].input as BatchGetCommandInput;
    const names = (asked.RequestItems?.[tableName('calibration')]?.Keys ?? []).map((k) => k.key as string);
    expect(names.filter((n) => n.startsWith('tenant#'))).toEqual([tenantItemKey('beta', KEY)]);
  });

  test('keys left unprocessed (throttling) are asked again', async () => {
    ddb
      .on(BatchGetCommand)
      .resolvesOnce({
        Responses: { [tableName('calibration')]: [] },
        UnprocessedKeys: { [tableName('calibration')]: { Keys: [{ key: tenantItemKey('acme', KEY) }] } },
      })
      .resolves({
        Responses: {
          [tableName('calibration')]: [
            { key: tenantItemKey('acme', KEY), input: Array(20).fill(1), output: Array(20).fill(2), version: 1 },
          ],
        },
      });
    expect((await loadFactors('acme', keys))(KEY).output).toBe(2);
    expect(ddb.commandCalls(BatchGetCommand)).toHaveLength(2);
  });

  test('a deployment item from before windows were per tenant is not read: nobody can tell whose ratios they are', async () => {
    ddb.on(BatchGetCommand).resolves({
      Responses: { [tableName('calibration')]: [{ key: KEY, input: Array(50).fill(4), output: Array(50).fill(4) }] },
    });
    expect((await loadFactors('acme', keys))(KEY)).toEqual(seedFor(KEY));
  });

  test('a failed read estimates from the seeds', async () => {
    ddb.on(BatchGetCommand).rejects(new Error('throttled'));
    expect((await loadFactors('acme', keys))(KEY)).toEqual(seedFor(KEY));
  });

  test("a settled run's sample goes to the tenant's window and, as its entry, to the deployment's", async () => {
    ddb.on(GetCommand, { Key: { key: tenantItemKey('acme', KEY) } }).resolves({
      Item: { key: tenantItemKey('acme', KEY), input: [1], output: [1], version: 4 },
    });
    ddb.on(GetCommand, { Key: { key: KEY } }).resolves({
      Item: { key: KEY, input: [9, 9], output: [9, 9], version: 7 },
    });
    ddb.on(PutCommand).resolves({});
    expect(await recordSamples('acme', [sample(150)], new Date('2026-11-01T00:00:00Z'))).toBe(1);
    const puts = ddb.commandCalls(PutCommand).map((c) => c.args[0].input);
    expect(puts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          TableName: tableName('calibration'),
          Item: {
            key: tenantItemKey('acme', KEY),
            input: [1, 1],
            output: [1, 1.5],
            version: 5,
            updatedAt: '2026-11-01T00:00:00.000Z',
          },
          ConditionExpression: 'version = :read',
          ExpressionAttributeValues: { ':read': 4 },
        }),
        // The legacy untagged lists are replaced by the tenant-tagged window.
        expect.objectContaining({
          Item: {
            key: KEY,
            entries: [{ tenant: 'acme', input: 1, output: 1.5 }],
            version: 8,
            updatedAt: '2026-11-01T00:00:00.000Z',
          },
          ConditionExpression: 'version = :read',
        }),
      ]),
    );
  });

  test('a write that lost a race is made again on the fresh item; a first item is written only if still absent', async () => {
    ddb
      .on(GetCommand)
      .resolvesOnce({})
      .resolves({ Item: { key: 'x', version: 1, input: [2], output: [2] } });
    ddb.on(PutCommand).rejectsOnce(conditionalCheckFailed()).resolves({});
    await recordSamples('acme', [sample(100)]);
    const conditions = ddb.commandCalls(PutCommand).map((c) => c.args[0].input.ConditionExpression);
    expect(conditions).toContain('attribute_not_exists(#key)');
    expect(ddb.commandCalls(PutCommand).length).toBeGreaterThanOrEqual(3);
  });
});

describe("creation's estimate", () => {
  test("a tenant's history moves its own estimates and not another tenant's", async () => {
    const keys = calibrationKeysFor(['openai'], TASK);
    expect(keys).toContain(KEY);
    // acme's runs answered 3x longer than predicted, 20 times: its own window. beta has no run of its own.
    ddb.on(BatchGetCommand).callsFake((input: BatchGetCommandInput) => {
      const asked = (input.RequestItems?.[tableName('calibration')]?.Keys ?? []).map((k) => k.key as string);
      const items = [
        { key: tenantItemKey('acme', KEY), input: Array(20).fill(1), output: Array(20).fill(3), version: 20 },
        { key: KEY, entries: [{ tenant: 'acme', input: 1, output: 3 }], version: 20 },
      ].filter((item) => asked.includes(item.key));
      return { Responses: { [tableName('calibration')]: items } };
    });
    const estimate = async (tenant: string) =>
      planRun(RECEIPT, TASK, ['openai'], { explicitOrder: true, factors: await loadFactors(tenant, keys) })
        .estimateMicros;
    const seeded = planRun(RECEIPT, TASK, ['openai'], { explicitOrder: true }).estimateMicros;
    expect(await estimate('acme')).toBeGreaterThan(seeded);
    expect(await estimate('beta')).toBe(seeded);
  });
});
