/**
 * The keys CLI (scripts/keys.ts) in process, with every AWS client mocked (aws-sdk-client-mock): `--stack` reads the
 * deployment from CloudFormation outputs (DescribeStacks); with a usage plan, `create` makes and attaches an API
 * Gateway key before storing the client key and cleans up on failure, `revoke` revokes in the table first and then
 * deletes the API Gateway key, `sync-usage-plan` repairs older keys. Without a usage plan no API Gateway call is made.
 * (test/integration/keys-cli.test.ts runs the CLI as a process against the local stack.)
 */

import {
  APIGatewayClient,
  ConflictException,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  GetApiKeysCommand,
  GetUsagePlanKeysCommand,
  NotFoundException,
  TooManyRequestsException,
} from '@aws-sdk/client-api-gateway';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { jest } from '@jest/globals';
import { mockClient } from 'aws-sdk-client-mock';
import { STATELESS_OUTPUTS, tableOutputKey } from '../../lib/outputs.js';
import { PRUNE_MIN_AGE_MS, TAGS } from '../../scripts/keys/usage-plan.js';
import { main } from '../../scripts/keys.js';

const ddb = mockClient(DynamoDBDocumentClient);
const apigw = mockClient(APIGatewayClient);
const cfn = mockClient(CloudFormationClient);

const TENANTS = 'prod-Tenants-1A2B';
const KEYS = 'prod-ApiKeys-3C4D';
const PLAN = 'up1a2b3c';

const meta = { $metadata: {} };
const notFound = () => new NotFoundException({ message: 'Invalid API Key identifier specified', ...meta });

function stacksFound(outputs?: { stateful?: Record<string, string>; stateless?: Record<string, string> }) {
  const stack = (name: string, values: Record<string, string>) => ({
    Stacks: [
      {
        StackName: name,
        CreationTime: new Date(),
        StackStatus: 'CREATE_COMPLETE' as const,
        Outputs: Object.entries(values).map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })),
      },
    ],
  });
  cfn.on(DescribeStacksCommand, { StackName: 'VisionStateful-prod' }).resolves(
    stack(
      'VisionStateful-prod',
      outputs?.stateful ?? {
        [tableOutputKey('tenants')]: TENANTS,
        [tableOutputKey('apiKeys')]: KEYS,
        [tableOutputKey('ledger')]: 'prod-Ledger-5E6F',
        UploadsBucketName: 'prod-uploads',
      },
    ),
  );
  cfn.on(DescribeStacksCommand, { StackName: 'VisionStateless-prod' }).resolves(
    stack(
      'VisionStateless-prod',
      outputs?.stateless ?? {
        [STATELESS_OUTPUTS.apiUrl]: 'https://abc.execute-api.eu-west-1.amazonaws.com/prod/',
        [STATELESS_OUTPUTS.usagePlanId]: PLAN,
      },
    ),
  );
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function keys(...args: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const outSpy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  const errSpy = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  try {
    const code = await main(args);
    return { code, stdout, stderr };
  } finally {
    outSpy.mockRestore();
    errSpy.mockRestore();
  }
}

function keyItem(overrides: Record<string, unknown> = {}) {
  return {
    keyHash: 'ab'.repeat(32),
    keyId: 'key_00000000000000aa',
    tenantId: 'acme',
    scopes: ['runs:read'],
    status: 'active',
    label: '',
    createdAt: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

const apiKeyPuts = () => ddb.commandCalls(PutCommand).filter((c) => c.args[0].input.TableName === KEYS);
const mutatingApiGatewayCalls = () => [
  ...apigw.commandCalls(CreateApiKeyCommand),
  ...apigw.commandCalls(CreateUsagePlanKeyCommand),
  ...apigw.commandCalls(DeleteApiKeyCommand),
];

let savedEnv: NodeJS.ProcessEnv;
beforeEach(() => {
  savedEnv = { ...process.env };
  process.env.VISION_LOCAL_STATE_FILE = '/nonexistent/keys-cli-unit/stack.json';
  delete process.env.VISION_USAGE_PLAN_ID;
  ddb.reset();
  apigw.reset();
  cfn.reset();
  ddb.resolves({});
  apigw.on(CreateApiKeyCommand).callsFake((input: { name?: string }) => ({ id: `ak-${input.name}` }));
  apigw.on(CreateUsagePlanKeyCommand).resolves({});
  apigw.on(DeleteApiKeyCommand).resolves({});
  apigw.on(GetUsagePlanKeysCommand).resolves({ items: [] });
  apigw.on(GetApiKeysCommand).resolves({ items: [] });
});
afterEach(() => {
  process.env = savedEnv;
});

describe('--stack: the deployment from CloudFormation outputs', () => {
  test('create reads both stacks, then makes and attaches a usage-plan key before storing the client key', async () => {
    stacksFound();
    const result = await keys('create', '--tenant', 'acme', '--stack', 'prod', '--json');
    expect(result.code).toBe(0);

    expect(
      cfn
        .commandCalls(DescribeStacksCommand)
        .map((c) => c.args[0].input.StackName)
        .sort(),
    ).toEqual(['VisionStateful-prod', 'VisionStateless-prod']);
    const body = JSON.parse(result.stdout) as { key: string; keyId: string; usagePlanKeyId: string };

    // One API Gateway key, named and tagged after the client key, with a separate random value.
    expect(apigw).toHaveReceivedCommandTimes(CreateApiKeyCommand, 1);
    const created = apigw.commandCalls(CreateApiKeyCommand)[0]?.args[0].input;
    const value = created?.value ?? '';
    expect(value).toMatch(/^[0-9a-f]{40}$/);
    expect(value).not.toContain(body.key);
    expect(created).toMatchObject({
      name: `vision-${body.keyId}`,
      enabled: true,
      tags: { [TAGS.keyId]: body.keyId, [TAGS.tenantId]: 'acme', [TAGS.usagePlanId]: PLAN },
    });
    const apiKeyId = `ak-vision-${body.keyId}`;
    expect(apigw).toHaveReceivedCommandWith(CreateUsagePlanKeyCommand, {
      usagePlanId: PLAN,
      keyId: apiKeyId,
      keyType: 'API_KEY',
    });

    // The tables named by the outputs; the item carries the usage-plan key's id and value, never the client key.
    expect(ddb).toHaveReceivedCommandWith(PutCommand, { TableName: TENANTS });
    const put = apiKeyPuts();
    expect(put).toHaveLength(1);
    expect(put[0]?.args[0].input.Item).toMatchObject({
      keyId: body.keyId,
      tenantId: 'acme',
      status: 'active',
      usagePlanKeyId: apiKeyId,
      usagePlanKeyValue: value,
    });
    expect(JSON.stringify(put[0]?.args[0].input.Item)).not.toContain(body.key);

    // The output names the usage-plan key's id; its value is printed nowhere.
    expect(body.usagePlanKeyId).toBe(apiKeyId);
    expect(result.stdout + result.stderr).not.toContain(value);
  });

  test('either stack name selects the same stage; the text output says what was attached', async () => {
    stacksFound();
    const result = await keys('create', '--tenant', 'acme', '--stack', 'VisionStateless-prod');
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`tables ${TENANTS}, ${KEYS}; usage plan ${PLAN}`);
    expect(result.stdout).toMatch(
      new RegExp(`Attached usage-plan key ak-vision-key_[0-9a-f]{16} to usage plan ${PLAN}`),
    );
    expect(cfn).toHaveReceivedCommandWith(DescribeStacksCommand, { StackName: 'VisionStateful-prod' });
  });

  test('list and credit use the tables from the outputs', async () => {
    stacksFound();
    ddb.on(QueryCommand).resolves({ Items: [keyItem({ usagePlanKeyId: 'ak1', usagePlanKeyValue: 'v'.repeat(40) })] });
    const listed = await keys('list', '--tenant', 'acme', '--stack', 'prod', '--json');
    expect(listed.code).toBe(0);
    expect(ddb).toHaveReceivedCommandWith(QueryCommand, { TableName: KEYS, IndexName: 'byTenant' });
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ keyId: 'key_00000000000000aa', usagePlanKeyId: 'ak1' }),
    ]);
    expect(listed.stdout).not.toContain('v'.repeat(40));
    expect(mutatingApiGatewayCalls()).toEqual([]);
  });

  test('list reads every page of the key index', async () => {
    stacksFound();
    ddb
      .on(QueryCommand)
      .resolvesOnce({ Items: [keyItem()], LastEvaluatedKey: { keyHash: 'ab'.repeat(32) } })
      .resolvesOnce({ Items: [keyItem({ keyId: 'key_00000000000000bb', keyHash: 'cd'.repeat(32) })] });
    const listed = await keys('list', '--tenant', 'acme', '--stack', 'prod', '--json');
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).map((k: { keyId: string }) => k.keyId)).toEqual([
      'key_00000000000000aa',
      'key_00000000000000bb',
    ]);
    expect(ddb.commandCalls(QueryCommand)[1]?.args[0].input.ExclusiveStartKey).toEqual({ keyHash: 'ab'.repeat(32) });
  });

  test('a stack that does not exist: exit 1 naming it, nothing else touched', async () => {
    cfn
      .on(DescribeStacksCommand)
      .rejects(
        Object.assign(new Error('Stack with id VisionStateful-prod does not exist'), { name: 'ValidationError' }),
      );
    const result = await keys('create', '--tenant', 'acme', '--stack', 'prod');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/stack VisionStateful-prod not found in region us-east-1/);
    expect(ddb).not.toHaveReceivedAnyCommand();
    expect(apigw).not.toHaveReceivedAnyCommand();
  });

  test('a stack deployed by an older version (no UsagePlanId output): exit 1, nothing created', async () => {
    stacksFound({ stateless: { [STATELESS_OUTPUTS.apiUrl]: 'https://x/' } });
    const result = await keys('create', '--tenant', 'acme', '--stack', 'prod');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/VisionStateless-prod has no output UsagePlanId/);
    expect(ddb).not.toHaveReceivedAnyCommand();
    expect(apigw).not.toHaveReceivedAnyCommand();
  });

  test('--region reaches the clients', async () => {
    stacksFound();
    await keys('tenants', '--stack', 'prod', '--region', 'eu-west-1', '--json');
    expect(process.env.AWS_REGION).toBe('eu-west-1');
    expect(ddb).toHaveReceivedCommandWith(ScanCommand, { TableName: TENANTS });
  });

  test.each([
    [['--stack', 'prod', '--tenants-table', 't', '--keys-table', 'k']],
    [['--stack', 'prod', '--local']],
    [['--stack', 'prod', '--endpoint', 'http://localhost:4566']],
    [['--stack', 'prod', '--usage-plan-id', 'p']],
    [['--stack', 'Prod_1']],
    [['--stack', 'VisionStateful-']],
    [['--local', '--usage-plan-id', 'p']],
  ])('usage error before any AWS call: %j', async (target) => {
    const result = await keys('list', '--tenant', 'acme', ...target);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/Usage: npm run keys/);
    expect(cfn).not.toHaveReceivedAnyCommand();
    expect(ddb).not.toHaveReceivedAnyCommand();
    expect(apigw).not.toHaveReceivedAnyCommand();
  });
});

describe('create: no half-made key', () => {
  const target = ['--tenants-table', TENANTS, '--keys-table', KEYS, '--usage-plan-id', PLAN];

  test('attaching fails: the new API Gateway key is deleted, the client key is neither stored nor shown', async () => {
    apigw.on(CreateUsagePlanKeyCommand).rejects(notFound());
    const result = await keys('create', '--tenant', 'acme', ...target, '--json');
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const apiKeyId = apigw.commandCalls(CreateApiKeyCommand)[0]?.args[0].input.name;
    expect(apigw).toHaveReceivedCommandWith(DeleteApiKeyCommand, { apiKey: `ak-${apiKeyId}` });
    expect(apiKeyPuts()).toEqual([]);
  });

  test('storing the key fails: the API Gateway key is deleted again, nothing is shown', async () => {
    ddb.on(PutCommand, { TableName: KEYS }).rejects(new Error('throughput exceeded'));
    const result = await keys('create', '--tenant', 'acme', ...target);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/throughput exceeded/);
    expect(apigw).toHaveReceivedCommandTimes(CreateUsagePlanKeyCommand, 1);
    expect(apigw).toHaveReceivedCommandTimes(DeleteApiKeyCommand, 1);
  });

  test('clean-up fails too: the error names the orphan and how it is removed', async () => {
    apigw.on(CreateUsagePlanKeyCommand).rejects(new Error('attach failed'));
    apigw.on(DeleteApiKeyCommand).rejects(new TooManyRequestsException({ message: 'slow down', ...meta }));
    const result = await keys('create', '--tenant', 'acme', ...target);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/attaching it to usage plan up1a2b3c failed \(attach failed\)/);
    expect(result.stderr).toMatch(/deleting the new API Gateway key ak-vision-key_[0-9a-f]{16} failed too/);
    expect(result.stderr).toMatch(/sync-usage-plan/);
    expect(apiKeyPuts()).toEqual([]);
  });

  test('the usage plan from VISION_USAGE_PLAN_ID works like --usage-plan-id', async () => {
    process.env.VISION_USAGE_PLAN_ID = PLAN;
    const result = await keys('create', '--tenant', 'acme', '--tenants-table', TENANTS, '--keys-table', KEYS);
    expect(result.code).toBe(0);
    expect(apigw).toHaveReceivedCommandWith(CreateUsagePlanKeyCommand, { usagePlanId: PLAN });
  });

  test('without a usage plan: no API Gateway or CloudFormation call, and a warning for a deployed table', async () => {
    const result = await keys('create', '--tenant', 'acme', '--tenants-table', TENANTS, '--keys-table', KEYS);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/no usage plan given.*403 until `npm run keys -- sync-usage-plan`/);
    expect(apigw).not.toHaveReceivedAnyCommand();
    expect(cfn).not.toHaveReceivedAnyCommand();
    expect(apiKeyPuts()[0]?.args[0].input.Item).not.toHaveProperty('usagePlanKeyId');
    // An emulator target (--endpoint, e.g. the local DynamoDB) gets no warning.
    const local = await keys(
      'create',
      '--tenant',
      'acme',
      '--tenants-table',
      't',
      '--keys-table',
      'k',
      '--endpoint',
      'http://127.0.0.1:1',
    );
    expect(local.stderr).not.toMatch(/no usage plan given/);
    expect(apigw).not.toHaveReceivedAnyCommand();
  });
});

describe('revoke: the table first, then the usage-plan key', () => {
  const target = ['--tenants-table', TENANTS, '--keys-table', KEYS];
  const withPlanKey = keyItem({ usagePlanKeyId: 'ak1', usagePlanKeyValue: 'v'.repeat(40) });

  test('revokes in the table, then deletes the API Gateway key and forgets it on the item', async () => {
    ddb.on(QueryCommand).resolves({ Items: [withPlanKey] });
    ddb.on(GetCommand).resolves({ Item: { ...withPlanKey, status: 'revoked' } });
    let revokedBeforeDelete = false;
    apigw.on(DeleteApiKeyCommand).callsFake(() => {
      revokedBeforeDelete = ddb
        .commandCalls(UpdateCommand)
        .some((c) => c.args[0].input.ExpressionAttributeValues?.[':revoked'] === 'revoked');
      return {};
    });
    const result = await keys('revoke', '--tenant', 'acme', '--key-id', 'key_00000000000000aa', ...target, '--json');
    expect(result.code).toBe(0);
    expect(revokedBeforeDelete).toBe(true);
    expect(apigw).toHaveReceivedCommandWith(DeleteApiKeyCommand, { apiKey: 'ak1' });
    expect(ddb).toHaveReceivedCommandWith(UpdateCommand, {
      TableName: KEYS,
      UpdateExpression: 'REMOVE usagePlanKeyId, usagePlanKeyValue',
      ExpressionAttributeValues: { ':id': 'ak1' },
    });
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'revoked', usagePlanKeyDeleted: 'ak1' });
  });

  test('an API Gateway key that is already gone counts as deleted', async () => {
    ddb.on(QueryCommand).resolves({ Items: [withPlanKey] });
    ddb.on(GetCommand).resolves({ Item: withPlanKey });
    apigw.on(DeleteApiKeyCommand).rejects(notFound());
    const result = await keys('revoke', '--tenant', 'acme', '--key-id', 'key_00000000000000aa', ...target);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Deleted its usage-plan key ak1/);
  });

  test('deleting fails: exit 1, the key stays revoked, and revoking again finishes the job', async () => {
    ddb.on(QueryCommand).resolves({ Items: [withPlanKey] });
    ddb.on(GetCommand).resolves({ Item: withPlanKey });
    apigw.on(DeleteApiKeyCommand).rejects(new TooManyRequestsException({ message: 'slow down', ...meta }));
    const failed = await keys('revoke', '--tenant', 'acme', '--key-id', 'key_00000000000000aa', ...target);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/is revoked in the table, but deleting its usage-plan key ak1 failed/);
    expect(ddb).toHaveReceivedCommandWith(UpdateCommand, {
      ExpressionAttributeValues: expect.objectContaining({ ':revoked': 'revoked' }),
    });

    // Second run: already revoked in the table; the API Gateway key is deleted now.
    const revokedItem = { ...withPlanKey, status: 'revoked', revokedAt: '2026-02-01T00:00:00.000Z' };
    ddb.on(QueryCommand).resolves({ Items: [revokedItem] });
    ddb.on(GetCommand).resolves({ Item: revokedItem });
    apigw.on(DeleteApiKeyCommand).resolves({});
    const again = await keys('revoke', '--tenant', 'acme', '--key-id', 'key_00000000000000aa', ...target, '--json');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ alreadyRevoked: true, usagePlanKeyDeleted: 'ak1' });
  });

  test('a key without a usage-plan key (local stack): no API Gateway call', async () => {
    ddb.on(QueryCommand).resolves({ Items: [keyItem()] });
    ddb.on(GetCommand).resolves({ Item: keyItem({ status: 'revoked' }) });
    const result = await keys('revoke', '--tenant', 'acme', '--key-id', 'key_00000000000000aa', ...target);
    expect(result.code).toBe(0);
    expect(apigw).not.toHaveReceivedAnyCommand();
  });
});

describe('sync-usage-plan', () => {
  const old = new Date(Date.now() - PRUNE_MIN_AGE_MS - 60_000);
  const records = [
    keyItem({ keyHash: '01', keyId: 'key_new', createdAt: '2026-01-01T00:00:01Z' }),
    keyItem({
      keyHash: '02',
      keyId: 'key_ok',
      usagePlanKeyId: 'ak-ok',
      usagePlanKeyValue: 'x',
      createdAt: '2026-01-01T00:00:02Z',
    }),
    keyItem({
      keyHash: '03',
      keyId: 'key_detached',
      usagePlanKeyId: 'ak-detached',
      usagePlanKeyValue: 'x',
      createdAt: '2026-01-01T00:00:03Z',
    }),
    keyItem({
      keyHash: '04',
      keyId: 'key_gone',
      usagePlanKeyId: 'ak-gone',
      usagePlanKeyValue: 'x',
      createdAt: '2026-01-01T00:00:04Z',
    }),
    keyItem({
      keyHash: '05',
      keyId: 'key_revoked',
      status: 'revoked',
      usagePlanKeyId: 'ak-revoked',
      usagePlanKeyValue: 'x',
      createdAt: '2026-01-01T00:00:05Z',
    }),
    keyItem({ keyHash: '06', keyId: 'key_revoked_clean', status: 'revoked', createdAt: '2026-01-01T00:00:06Z' }),
  ];

  function world() {
    stacksFound();
    ddb.on(ScanCommand, { TableName: KEYS }).resolves({ Items: records });
    apigw.on(GetUsagePlanKeysCommand).resolves({ items: [{ id: 'ak-ok' }] });
    apigw.on(CreateUsagePlanKeyCommand, { keyId: 'ak-gone' }).rejects(notFound());
    apigw
      .on(CreateUsagePlanKeyCommand, { keyId: 'ak-detached' })
      .rejects(new ConflictException({ message: 'already attached', ...meta }));
    const tags = (planId: string, keyId: string) => ({
      [TAGS.usagePlanId]: planId,
      [TAGS.keyId]: keyId,
      [TAGS.tenantId]: 'acme',
    });
    apigw.on(GetApiKeysCommand).resolves({
      items: [
        { id: 'ak-ok', name: 'vision-key_ok', createdDate: old, tags: tags(PLAN, 'key_ok') },
        { id: 'ak-orphan', name: 'vision-key_orphan', createdDate: old, tags: tags(PLAN, 'key_orphan') },
        { id: 'ak-fresh', name: 'vision-key_fresh', createdDate: new Date(), tags: tags(PLAN, 'key_fresh') },
        { id: 'ak-other-stage', name: 'vision-key_other', createdDate: old, tags: tags('upOTHER', 'key_other') },
        { id: 'ak-not-ours', name: 'partner', createdDate: old, tags: { [TAGS.usagePlanId]: PLAN } },
      ],
    });
  }

  test('gives keys a usage-plan key, re-attaches, replaces, deletes for revoked keys, prunes old orphans', async () => {
    world();
    const result = await keys('sync-usage-plan', '--stack', 'prod', '--json');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as {
      checked: number;
      unchanged: number;
      actions: Record<string, unknown>[];
    };
    expect(report.checked).toBe(6);
    expect(report.unchanged).toBe(2); // key_ok, key_revoked_clean
    expect(report.actions).toEqual([
      { keyId: 'key_new', tenantId: 'acme', action: 'created', usagePlanKeyId: 'ak-vision-key_new' },
      { keyId: 'key_detached', tenantId: 'acme', action: 'attached', usagePlanKeyId: 'ak-detached' },
      {
        keyId: 'key_gone',
        tenantId: 'acme',
        action: 'replaced',
        usagePlanKeyId: 'ak-vision-key_gone',
        note: 'API key ak-gone was gone',
      },
      { keyId: 'key_revoked', tenantId: 'acme', action: 'deleted', usagePlanKeyId: 'ak-revoked' },
      {
        keyId: 'key_orphan',
        tenantId: 'acme',
        action: 'pruned',
        usagePlanKeyId: 'ak-orphan',
        note: expect.any(String),
      },
    ]);

    // New keys are recorded only on still-active items without one (or still holding the gone one).
    expect(ddb).toHaveReceivedCommandWith(UpdateCommand, {
      Key: { keyHash: '01' },
      ConditionExpression: '#status = :active AND attribute_not_exists(usagePlanKeyId)',
    });
    expect(ddb).toHaveReceivedCommandWith(UpdateCommand, {
      Key: { keyHash: '04' },
      ConditionExpression: '#status = :active AND usagePlanKeyId = :old',
      ExpressionAttributeValues: expect.objectContaining({ ':old': 'ak-gone', ':id': 'ak-vision-key_gone' }),
    });
    expect(ddb).toHaveReceivedCommandWith(UpdateCommand, {
      Key: { keyHash: '05' },
      UpdateExpression: 'REMOVE usagePlanKeyId, usagePlanKeyValue',
    });
    // Deleted: the revoked key's and the old orphan; never a fresh one, another plan's or a key this tool did not make.
    expect(
      apigw
        .commandCalls(DeleteApiKeyCommand)
        .map((c) => c.args[0].input.apiKey)
        .sort(),
    ).toEqual(['ak-orphan', 'ak-revoked']);
  });

  test('--dry-run reports the same plan and changes nothing', async () => {
    world();
    const result = await keys('sync-usage-plan', '--stack', 'prod', '--dry-run');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Dry run: would change 5 of 6 keys/);
    expect(mutatingApiGatewayCalls()).toEqual([]);
    expect(ddb).not.toHaveReceivedCommand(UpdateCommand);
  });

  test('a long sync never prunes an API key created after its scan began (a concurrent create)', async () => {
    stacksFound();
    const start = Date.now();
    const clock = jest.spyOn(Date, 'now').mockReturnValue(start);
    try {
      // The scan takes 20 minutes (thousands of keys at API Gateway's 5 requests per second).
      ddb.on(ScanCommand).callsFake(() => {
        clock.mockReturnValue(start + 20 * 60_000);
        return { Items: [] };
      });
      apigw.on(GetUsagePlanKeysCommand).resolves({ items: [] });
      apigw.on(GetApiKeysCommand).resolves({
        items: [
          {
            id: 'ak-concurrent',
            name: 'vision-key_concurrent',
            createdDate: new Date(start + 5 * 60_000),
            tags: { [TAGS.usagePlanId]: PLAN, [TAGS.keyId]: 'key_concurrent', [TAGS.tenantId]: 'acme' },
          },
        ],
      });
      const result = await keys('sync-usage-plan', '--stack', 'prod', '--json');
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout).actions).toEqual([]);
      expect(apigw).not.toHaveReceivedCommand(DeleteApiKeyCommand);
    } finally {
      clock.mockRestore();
    }
  });

  test('a key revoked while it is synced: the new API Gateway key is deleted again', async () => {
    stacksFound();
    ddb.on(ScanCommand).resolves({ Items: records.slice(0, 1) });
    ddb.on(UpdateCommand).rejects(new ConditionalCheckFailedException({ message: 'changed', ...meta }));
    const result = await keys('sync-usage-plan', '--stack', 'prod', '--json');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).actions).toEqual([
      { keyId: 'key_new', tenantId: 'acme', action: 'skipped', note: 'changed meanwhile' },
    ]);
    expect(apigw).toHaveReceivedCommandWith(DeleteApiKeyCommand, { apiKey: 'ak-vision-key_new' });
  });

  test('a failure on one key is reported (exit 1) and the others are still synced', async () => {
    stacksFound();
    ddb.on(ScanCommand).resolves({ Items: [records[0], records[4]].flatMap((r) => (r ? [r] : [])) });
    apigw.on(CreateApiKeyCommand).rejects(new Error('LimitExceededException: too many keys'));
    const result = await keys('sync-usage-plan', '--stack', 'prod', '--json');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/failed: key_new \(tenant "acme"\): .*too many keys/);
    expect(apigw).toHaveReceivedCommandWith(DeleteApiKeyCommand, { apiKey: 'ak-revoked' });
  });

  test('needs a usage plan (usage error without one)', async () => {
    const result = await keys('sync-usage-plan', '--tenants-table', TENANTS, '--keys-table', KEYS);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/sync-usage-plan needs a usage plan/);
    expect(ddb).not.toHaveReceivedAnyCommand();
  });

  test('the table target with --usage-plan-id works without CloudFormation', async () => {
    ddb.on(ScanCommand).resolves({ Items: [] });
    const result = await keys(
      'sync-usage-plan',
      '--tenants-table',
      TENANTS,
      '--keys-table',
      KEYS,
      '--usage-plan-id',
      PLAN,
    );
    expect(result.code).toBe(0);
    expect(cfn).not.toHaveReceivedAnyCommand();
    expect(apigw).toHaveReceivedCommandWith(GetUsagePlanKeysCommand, { usagePlanId: PLAN });
    expect(ddb).toHaveReceivedCommandWith(ScanCommand, { TableName: KEYS, ConsistentRead: true });
  });
});

describe('usage-backfill', () => {
  test('without the Runs and Usage tables it is a usage error naming them, and reads nothing', async () => {
    // The environment is restored after each test.
    delete process.env.RUNS_TABLE;
    delete process.env.USAGE_TABLE;
    const result = await keys('usage-backfill', '--tenants-table', TENANTS, '--keys-table', KEYS);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/usage-backfill needs the Runs and Usage tables/);
    expect(ddb).not.toHaveReceivedAnyCommand();
  });

  test('--stack takes the tables from the outputs and reports what it counted', async () => {
    stacksFound({
      stateful: {
        [tableOutputKey('tenants')]: TENANTS,
        [tableOutputKey('apiKeys')]: KEYS,
        [tableOutputKey('runs')]: 'runs-prod',
        [tableOutputKey('usage')]: 'usage-prod',
      },
    });
    ddb.on(ScanCommand).resolves({ Items: [] });
    const result = await keys('usage-backfill', '--stack', 'prod', '--json');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ scanned: 0, counted: 0, skipped: 0 });
    expect(ddb).toHaveReceivedCommandWith(ScanCommand, { TableName: 'runs-prod' });
  });
});
