/**
 * `npm run keys` (scripts/keys.ts) as an operator runs it: a child process against the shared local stack's tables.
 * The API side is checked over HTTP; revocation is checked in the table (the local authorizer cache keeps accepting a
 * key that was used within its 60 s TTL, as API Gateway does), and over HTTP only for a key revoked before first use.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { type CliResult, call, keysCli, stack, tenantRecord } from './client.js';

/** Runs the CLI with a clean target environment (no table or endpoint variables inherited from the test process). */
const cli = (args: string[]) => keysCli(args);

/** The shared stack's tables, named explicitly (the deployed-style target) with its DynamoDB endpoint. */
function target(): string[] {
  const info = stack();
  return [
    '--tenants-table',
    info.resources.tables.tenants ?? '',
    '--keys-table',
    info.resources.tables.apiKeys ?? '',
    '--endpoint',
    info.endpoints.dynamodb,
  ];
}

async function keys(args: string[]): Promise<CliResult> {
  return cli([...args, ...target()]);
}

async function keyItem(key: string): Promise<Record<string, unknown> | undefined> {
  const client = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: stack().endpoints.dynamodb }));
  const out = await client.send(
    new GetCommand({
      TableName: stack().resources.tables.apiKeys,
      Key: { keyHash: createHash('sha256').update(key).digest('hex') },
      ConsistentRead: true,
    }),
  );
  return out.Item;
}

const newTenant = () => `cli-${randomUUID().slice(0, 8)}`;

describe('keys CLI against the local stack', () => {
  test('create -> the key works; list shows it without secrets; revoke -> revoked in the table', async () => {
    const tenant = newTenant();
    const created = await keys([
      'create',
      '--tenant',
      tenant,
      '--label',
      'ci',
      '--scopes',
      'runs:read,runs:write',
      '--json',
    ]);
    expect(created.code).toBe(0);
    expect(created.stderr).toMatch(/only time the API key is shown/);
    const body = JSON.parse(created.stdout) as { key: string; keyId: string; tenantCreated: boolean; scopes: string[] };
    expect(body).toMatchObject({ tenantCreated: true, scopes: ['runs:read', 'runs:write'] });
    expect(body.key).toMatch(/^vk_/);

    // The key authenticates at once, and only its hash is stored.
    expect((await call('GET', '/v1/schemas', { key: body.key })).status).toBe(200);
    const item = await keyItem(body.key);
    expect(item).toMatchObject({ keyId: body.keyId, tenantId: tenant, status: 'active', label: 'ci' });
    expect(JSON.stringify(item)).not.toContain(body.key);
    // No usage plan on the local stack: no API Gateway key (any API Gateway call would fail here, without AWS).
    expect(item).not.toHaveProperty('usagePlanKeyId');
    expect(body).not.toHaveProperty('usagePlanKeyId');

    // A tenant created without --credit-usd is unlimited.
    expect(await tenantRecord(tenant)).not.toHaveProperty('availableMicros');

    const hash = createHash('sha256').update(body.key).digest('hex');
    for (const args of [
      ['list', '--tenant', tenant, '--json'],
      ['list', '--tenant', tenant],
    ]) {
      const listed = await keys(args);
      expect(listed.code).toBe(0);
      expect(listed.stdout).toContain(body.keyId);
      expect(listed.stdout).toContain('runs:read');
      expect(listed.stdout).not.toContain(body.key);
      expect(listed.stdout).not.toContain(hash);
      expect(listed.stdout).not.toMatch(/keyHash/);
    }
    const rows = JSON.parse((await keys(['list', '--tenant', tenant, '--json'])).stdout) as Record<string, unknown>[];
    expect(rows).toEqual([
      {
        keyId: body.keyId,
        label: 'ci',
        scopes: ['runs:read', 'runs:write'],
        status: 'active',
        createdAt: expect.any(String),
      },
    ]);

    const revoked = await keys(['revoke', '--tenant', tenant, '--key-id', body.keyId]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(/60 s/);
    expect(await keyItem(body.key)).toMatchObject({ status: 'revoked', revokedAt: expect.any(String) });
    const after = JSON.parse((await keys(['list', '--tenant', tenant, '--json'])).stdout) as Record<string, unknown>[];
    expect(after[0]).toMatchObject({ keyId: body.keyId, status: 'revoked', revokedAt: expect.any(String) });

    // Revoking again is harmless; another tenant's key id is not found.
    const again = await keys(['revoke', '--tenant', tenant, '--key-id', body.keyId, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ alreadyRevoked: true });
    const foreign = await keys(['revoke', '--tenant', 'tenant-a', '--key-id', body.keyId]);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toMatch(/has no key/);
  });

  test('a key revoked before its first use is rejected by the API (401)', async () => {
    const tenant = newTenant();
    const created = await keys(['create', '--tenant', tenant, '--json']);
    expect(created.code).toBe(0);
    const { key, keyId } = JSON.parse(created.stdout) as { key: string; keyId: string };
    expect((await keys(['revoke', '--tenant', tenant, '--key-id', keyId])).code).toBe(0);
    expect((await call('GET', '/v1/schemas', { key })).status).toBe(401);
  });

  test('credit: starting credit, show, add; adding makes an unlimited tenant limited', async () => {
    const limited = newTenant();
    expect((await keys(['create', '--tenant', limited, '--credit-usd', '2.5'])).code).toBe(0);
    expect((await tenantRecord(limited)).availableMicros).toBe(2_500_000);

    const shown = await keys(['credit', '--tenant', limited, '--json']);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toEqual({
      tenantId: limited,
      unlimited: false,
      availableUsd: 2.5,
      heldUsd: 0,
      chargedUsd: 0,
      refundedUsd: 0,
    });
    const text = await keys(['credit', '--tenant', limited]);
    expect(text.stdout).toMatch(/available\s+\$2\.500000/);
    expect(text.stdout).toMatch(/refunded\s+\$0\.000000/);

    const added = await keys(['credit', '--tenant', limited, '--add-usd', '1.25', '--json']);
    expect(added.code).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ availableUsd: 3.75, addedUsd: 1.25 });
    expect((await tenantRecord(limited)).availableMicros).toBe(3_750_000);

    // --credit-usd on an existing tenant would silently do nothing: refused, and no key is created.
    const conflict = await keys(['create', '--tenant', limited, '--credit-usd', '5']);
    expect(conflict.code).toBe(1);
    expect(JSON.parse((await keys(['list', '--tenant', limited, '--json'])).stdout)).toHaveLength(1);

    const unlimited = newTenant();
    expect((await keys(['create', '--tenant', unlimited])).code).toBe(0);
    expect(JSON.parse((await keys(['credit', '--tenant', unlimited, '--json'])).stdout)).toMatchObject({
      unlimited: true,
      availableUsd: null,
    });
    const made = await keys(['credit', '--tenant', unlimited, '--add-usd', '0.000001']);
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(/was unlimited/);
    expect((await tenantRecord(unlimited)).availableMicros).toBe(1);

    const missing = await keys(['credit', '--tenant', newTenant()]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/not found/);

    const listed = await keys(['tenants', '--json']);
    expect(listed.code).toBe(0);
    const ids = (JSON.parse(listed.stdout) as { tenantId: string }[]).map((t) => t.tenantId);
    expect(ids).toEqual(expect.arrayContaining([limited, unlimited, 'tenant-a']));
  });

  test('--local reads the stack state file that npm start writes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keys-cli-'));
    try {
      const file = join(dir, 'stack.json');
      // The pid must be a live process; this one is.
      await writeFile(file, JSON.stringify({ ...stack(), pid: process.pid }));
      const tenant = newTenant();
      const created = await cli(['create', '--tenant', tenant, '--local', '--state-file', file, '--json']);
      expect(created.code).toBe(0);
      const { key } = JSON.parse(created.stdout) as { key: string };
      expect((await call('GET', '/v1/schemas', { key })).status).toBe(200);

      await writeFile(file, JSON.stringify({ ...stack(), pid: 2 ** 22 + 1 }));
      const stale = await cli(['list', '--tenant', tenant, '--state-file', file]);
      expect(stale.code).toBe(1);
      expect(stale.stderr).toMatch(/stale/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('usage errors exit 2 and touch nothing', async () => {
    const cases: string[][] = [
      [],
      ['frobnicate'],
      ['create'],
      ['create', '--tenant', 'bad#tenant'],
      ['create', '--tenant', 'x', '--scopes', 'runs:read,root'],
      ['create', '--tenant', 'x', '--credit-usd', 'ten'],
      ['credit', '--tenant', 'x', '--add-usd', '0'],
      ['credit', '--tenant', 'x', '--add-usd', '1e3'],
      ['revoke', '--tenant', 'x'],
      ['list', '--tenant', 'x', '--label', 'y'],
      ['list', '--tenant', 'x', '--no-such-flag'],
      ['list', '--tenant', 'x', 'extra'],
      // --stack reads the tables from the stacks' outputs: it cannot be combined with the table flags added here.
      ['list', '--tenant', 'x', '--stack', 'VisionStateful-dev'],
      ['list', '--tenant', 'x', '--local', '--keys-table', 'k'],
      // sync-usage-plan needs a usage plan (--stack or --usage-plan-id); --dry-run is sync's only.
      ['sync-usage-plan'],
      ['create', '--tenant', 'x', '--dry-run'],
    ];
    const results = await Promise.all(cases.map((args) => keys(args)));
    results.forEach((result, i) => {
      expect({ args: cases[i], code: result.code }).toEqual({ args: cases[i], code: 2 });
      expect(result.stderr).toMatch(/Usage: npm run keys/);
      expect(result.stdout).toBe('');
    });
    // No target at all (no flags, no env, no state file) is a usage error too.
    const noTarget = await cli(['list', '--tenant', 'x']);
    expect(noTarget.code).toBe(2);
    expect(noTarget.stderr).toMatch(/no target/);

    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Commands:/);
  });
});
