/**
 * `npm run keys -- <command>`: tenants, API keys and credit, against the local stack or a deployment's tables.
 * docs/keys.md is the manual. Exit codes: 0 ok, 2 usage error, 1 failure; messages go to stderr, results to stdout.
 *
 * Target: `--local` (or, when no other target is given, a running `npm start`'s `.local-data/stack.json`) sets the
 * DynamoDB endpoint and table names from that file; otherwise `--tenants-table`/`--keys-table` or the environment
 * variables TENANTS_TABLE/API_KEYS_TABLE name deployed tables, reached with the usual AWS credentials and region.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { tables } from '../shared/infra/resources.js';
import { gatewaySettings, SCOPES, type Scope } from '../shared/infra/routes.js';
import { MICROS_PER_USD, type Micros } from '../shared/money.js';

class UsageError extends Error {}

const USAGE = `Usage: npm run keys -- <command> [options]

Commands:
  create  --tenant T [--scopes s1,s2] [--label L] [--credit-usd N]
          Create an API key (and the tenant, if absent). The key is printed once and never stored.
          --scopes     comma-separated, from: ${SCOPES.join(', ')} (default: runs:read,runs:write,runs:verify)
          --credit-usd starting credit of a tenant created now (default: unlimited)
  list    --tenant T                     List a tenant's keys (id, label, scopes, status, dates; never secrets)
  revoke  --tenant T --key-id K          Revoke a key
  credit  --tenant T [--add-usd N]       Show a tenant's credit, or add N USD (makes an unlimited tenant limited)
  tenants                                List all tenants (table scan)
  help                                   This text

Target (one of):
  --local [--state-file F]               The running local stack (default when .local-data/stack.json exists)
  --tenants-table X --keys-table Y       Deployed tables (or env TENANTS_TABLE / API_KEYS_TABLE);
                                         AWS credentials and region as usual (--region R to override)
  --endpoint URL                         DynamoDB endpoint for the table target (e.g. LocalStack)

Output: human-readable; --json for JSON on stdout.
Exit codes: 0 ok, 2 usage error, 1 failure.`;

const optionSpec = {
  tenant: { type: 'string' },
  scopes: { type: 'string' },
  label: { type: 'string' },
  'credit-usd': { type: 'string' },
  'add-usd': { type: 'string' },
  'key-id': { type: 'string' },
  json: { type: 'boolean' },
  local: { type: 'boolean' },
  'state-file': { type: 'string' },
  'tenants-table': { type: 'string' },
  'keys-table': { type: 'string' },
  endpoint: { type: 'string' },
  region: { type: 'string' },
  stack: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type OptionName = keyof typeof optionSpec;
type Values = Partial<Record<OptionName, string | boolean>>;

const targetOptions: OptionName[] = [
  'local',
  'state-file',
  'tenants-table',
  'keys-table',
  'endpoint',
  'region',
  'stack',
];
const commandOptions: Record<string, OptionName[]> = {
  create: ['tenant', 'scopes', 'label', 'credit-usd'],
  list: ['tenant'],
  revoke: ['tenant', 'key-id'],
  credit: ['tenant', 'add-usd'],
  tenants: [],
};

const DEFAULT_SCOPES: Scope[] = ['runs:read', 'runs:write', 'runs:verify'];
const TENANT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const USD = /^\d{1,12}(\.\d{1,6})?$/;

const defaultStateFile = () =>
  resolve(process.env.VISION_LOCAL_STATE_FILE || fileURLToPath(new URL('../.local-data/stack.json', import.meta.url)));

interface LocalState {
  baseUrl?: string;
  pid?: number;
  endpoints: { dynamodb: string };
  resources: { tables: Record<string, string> };
}

function str(values: Values, name: OptionName): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

function required(values: Values, name: OptionName): string {
  const value = str(values, name);
  if (value === undefined || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value.trim();
}

function tenantOption(values: Values): string {
  const tenant = required(values, 'tenant');
  if (!TENANT_ID.test(tenant)) {
    throw new UsageError(
      `--tenant "${tenant}": use 1-128 letters, digits, '.', '_' or '-' (starting with a letter/digit)`,
    );
  }
  return tenant;
}

/** Parses a dollar amount typed by the operator into micros (at most 6 decimals, no exponent or sign). */
function usdOption(values: Values, name: OptionName, { allowZero }: { allowZero: boolean }): Micros {
  const raw = required(values, name);
  if (!USD.test(raw)) throw new UsageError(`--${name} "${raw}": expected a non-negative USD amount such as 25 or 0.50`);
  const [whole = '0', fraction = ''] = raw.split('.');
  const micros = Number(whole) * MICROS_PER_USD + Number(fraction.padEnd(6, '0'));
  if (!allowZero && micros === 0) throw new UsageError(`--${name} must be greater than 0`);
  return micros;
}

function scopesOption(values: Values): Scope[] {
  const raw = str(values, 'scopes');
  if (raw === undefined) return DEFAULT_SCOPES;
  const scopes = [...new Set(raw.split(',').map((s) => s.trim()))].filter((s) => s !== '');
  if (scopes.length === 0) throw new UsageError('--scopes is empty');
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) throw new UsageError(`unknown scope(s) ${unknown.join(', ')}; known: ${SCOPES.join(', ')}`);
  return scopes as Scope[];
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error: unknown) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readLocalState(file: string): LocalState {
  if (!existsSync(file)) {
    throw new Error(`no local stack: ${file} does not exist (start one with \`npm start\`)`);
  }
  let state: LocalState;
  try {
    state = JSON.parse(readFileSync(file, 'utf8')) as LocalState;
  } catch (error: unknown) {
    throw new Error(`${file} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof state.endpoints?.dynamodb !== 'string' || typeof state.resources?.tables !== 'object') {
    throw new Error(`${file} lacks endpoints.dynamodb or resources.tables`);
  }
  if (typeof state.pid === 'number' && !isAlive(state.pid)) {
    throw new Error(`${file} is stale: the stack (pid ${state.pid}) is not running; start one with \`npm start\``);
  }
  return state;
}

/** Resolves the target and points the AWS SDK and the stores at it (through the environment they read). */
function applyTarget(values: Values): string {
  if (values.stack !== undefined) {
    throw new UsageError(
      '--stack is not supported: the VisionStateful stack has no outputs for its table names. ' +
        'Pass --tenants-table and --keys-table (docs/keys.md shows how to look them up).',
    );
  }
  const tenantsFlag = str(values, 'tenants-table');
  const keysFlag = str(values, 'keys-table');
  const tableFlagGiven = tenantsFlag !== undefined || keysFlag !== undefined;
  if (values.local === true && (tableFlagGiven || values.endpoint !== undefined)) {
    throw new UsageError('--local cannot be combined with --tenants-table, --keys-table or --endpoint');
  }
  if (values['state-file'] !== undefined && (tableFlagGiven || values.endpoint !== undefined)) {
    throw new UsageError('--state-file selects the local stack; it cannot be combined with a table target');
  }
  const tenantsEnv = process.env[tables.tenants.envVar] || undefined;
  const keysEnv = process.env[tables.apiKeys.envVar] || undefined;
  const stateFile = str(values, 'state-file') ? resolve(str(values, 'state-file') as string) : defaultStateFile();

  const useLocal =
    values.local === true ||
    values['state-file'] !== undefined ||
    (!tableFlagGiven && tenantsEnv === undefined && keysEnv === undefined && existsSync(stateFile));
  const region = str(values, 'region');
  if (region) process.env.AWS_REGION = region;

  if (useLocal) {
    const state = readLocalState(stateFile);
    const tenantsTable = state.resources.tables.tenants;
    const keysTable = state.resources.tables.apiKeys;
    if (!tenantsTable || !keysTable) throw new Error(`${stateFile} lacks resources.tables.tenants or .apiKeys`);
    process.env.AWS_ENDPOINT_URL_DYNAMODB = state.endpoints.dynamodb;
    process.env[tables.tenants.envVar] = tenantsTable;
    process.env[tables.apiKeys.envVar] = keysTable;
    // DynamoDB Local accepts any credentials, but the SDK needs some, and a region.
    process.env.AWS_REGION ??= 'us-east-1';
    if (!process.env.AWS_ACCESS_KEY_ID && !process.env.AWS_PROFILE) {
      process.env.AWS_ACCESS_KEY_ID = 'local';
      process.env.AWS_SECRET_ACCESS_KEY = 'local';
    }
    return `local stack ${state.baseUrl ?? ''} (${state.endpoints.dynamodb})`.replace('  ', ' ');
  }

  const tenantsTable = tenantsFlag ?? tenantsEnv;
  const keysTable = keysFlag ?? keysEnv;
  if (!tenantsTable || !keysTable) {
    throw new UsageError(
      tableFlagGiven || tenantsEnv || keysEnv
        ? 'both tables are needed: --tenants-table and --keys-table (or TENANTS_TABLE and API_KEYS_TABLE)'
        : 'no target: start the local stack (`npm start`) or use --local, or name deployed tables with ' +
            '--tenants-table and --keys-table (or TENANTS_TABLE and API_KEYS_TABLE)',
    );
  }
  process.env[tables.tenants.envVar] = tenantsTable;
  process.env[tables.apiKeys.envVar] = keysTable;
  const endpoint = str(values, 'endpoint');
  if (endpoint) process.env.AWS_ENDPOINT_URL_DYNAMODB = endpoint;
  return `tables ${tenantsTable}, ${keysTable}${endpoint ? ` at ${endpoint}` : ''}`;
}

const usd = (micros: number) => `$${(micros / MICROS_PER_USD).toFixed(6)}`;
const usdNumber = (micros: number) => micros / MICROS_PER_USD;

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function out(text: string): void {
  process.stdout.write(`${text}\n`);
}

function errorMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.name === 'ResourceNotFoundException') {
    return `${error.message} (check the table names, region and credentials: ${process.env[tables.tenants.envVar]}, ${process.env[tables.apiKeys.envVar]})`;
  }
  if (/region is missing/i.test(error.message)) return `${error.message}: set AWS_REGION (or pass --region)`;
  return error.name && error.name !== 'Error' ? `${error.name}: ${error.message}` : error.message;
}

async function run(argv: string[]): Promise<number> {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options: optionSpec, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (error: unknown) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  const command = positionals[0];
  if (values.help === true || command === 'help' || command === undefined) {
    if (command === undefined && values.help !== true) throw new UsageError('a command is required');
    out(USAGE);
    return 0;
  }
  const allowed = commandOptions[command];
  if (!allowed) throw new UsageError(`unknown command "${command}"`);
  if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`);
  for (const name of Object.keys(values) as OptionName[]) {
    if (name !== 'json' && !allowed.includes(name) && !targetOptions.includes(name)) {
      throw new UsageError(`--${name} does not apply to "${command}"`);
    }
  }
  const json = values.json === true;

  // Validate every option before touching any table.
  const tenant = command === 'tenants' ? '' : tenantOption(values);
  const scopes = command === 'create' ? scopesOption(values) : DEFAULT_SCOPES;
  const label = str(values, 'label') ?? '';
  const startCredit =
    command === 'create' && values['credit-usd'] !== undefined
      ? usdOption(values, 'credit-usd', { allowZero: true })
      : undefined;
  const addMicros =
    command === 'credit' && values['add-usd'] !== undefined
      ? usdOption(values, 'add-usd', { allowZero: false })
      : undefined;
  const keyId = command === 'revoke' ? required(values, 'key-id') : '';

  const target = applyTarget(values);
  if (!json) process.stderr.write(`keys: ${target}\n`);
  // The stores read table names from the environment, so they load only once the target is set.
  const store = await import('../shared/store/tenants.js');

  switch (command) {
    case 'create': {
      const existing = await store.getTenant(tenant);
      if (existing && startCredit !== undefined) {
        throw new Error(
          `tenant "${tenant}" already exists; --credit-usd only sets a new tenant's starting credit ` +
            `(use \`npm run keys -- credit --tenant ${tenant} --add-usd N\`). Nothing was created.`,
        );
      }
      if (!existing) {
        await store.ensureTenant(tenant, startCredit !== undefined ? { availableMicros: startCredit } : {});
      }
      const { key, record } = await store.createApiKey(tenant, { scopes, label });
      process.stderr.write(
        'WARNING: this is the only time the API key is shown. It is not stored (only its SHA-256 hash is); ' +
          'copy it now. A lost key cannot be recovered: revoke it and create another.\n',
      );
      if (json) {
        out(
          JSON.stringify({
            tenantId: tenant,
            tenantCreated: !existing,
            keyId: record.keyId,
            key,
            scopes: record.scopes,
            label: record.label,
            createdAt: record.createdAt,
          }),
        );
      } else {
        if (!existing) {
          out(`Created tenant "${tenant}" (credit: ${startCredit !== undefined ? usd(startCredit) : 'unlimited'})`);
        }
        out(
          `Created key ${record.keyId} for tenant "${tenant}" (scopes: ${record.scopes.join(',')}; label: "${label}")`,
        );
        out(`\n  ${key}\n`);
      }
      return 0;
    }

    case 'list': {
      const keys = (await store.listApiKeys(tenant))
        .map((k) => ({
          keyId: k.keyId,
          label: k.label,
          scopes: k.scopes,
          status: k.status,
          createdAt: k.createdAt,
          ...(k.revokedAt ? { revokedAt: k.revokedAt } : {}),
        }))
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
      if (json) out(JSON.stringify(keys));
      else if (keys.length === 0) out(`No keys for tenant "${tenant}".`);
      else {
        out(
          table([
            ['KEY ID', 'STATUS', 'CREATED', 'REVOKED', 'SCOPES', 'LABEL'],
            ...keys.map((k) => [k.keyId, k.status, k.createdAt, k.revokedAt ?? '-', k.scopes.join(','), k.label]),
          ]),
        );
      }
      return 0;
    }

    case 'revoke': {
      const record = (await store.listApiKeys(tenant)).find((k) => k.keyId === keyId);
      if (!record) throw new Error(`tenant "${tenant}" has no key ${keyId}`);
      const alreadyRevoked = record.status === 'revoked';
      if (!alreadyRevoked && !(await store.revokeApiKey(tenant, keyId))) {
        throw new Error(`tenant "${tenant}" has no key ${keyId}`);
      }
      const cacheSeconds = gatewaySettings.authorizerCacheSeconds;
      if (json) {
        out(
          JSON.stringify({
            tenantId: tenant,
            keyId,
            status: 'revoked',
            alreadyRevoked,
            authorizerCacheSeconds: cacheSeconds,
          }),
        );
      } else {
        out(
          alreadyRevoked
            ? `Key ${keyId} of tenant "${tenant}" was already revoked (${record.revokedAt ?? 'earlier'}).`
            : `Revoked key ${keyId} of tenant "${tenant}".`,
        );
        out(
          `The table is updated at once; the API's authorizer cache may still accept the key for up to ` +
            `${cacheSeconds} s if it was used within the last ${cacheSeconds} s.`,
        );
      }
      return 0;
    }

    case 'credit': {
      const before = await store.getTenant(tenant);
      if (!before) throw new Error(`tenant "${tenant}" not found`);
      if (addMicros !== undefined) {
        try {
          await store.addCredit(tenant, addMicros);
        } catch (error: unknown) {
          if (error instanceof Error && error.name === 'ConditionalCheckFailedException') {
            throw new Error(`tenant "${tenant}" not found`);
          }
          throw error;
        }
        if (!json) {
          out(`Added ${usd(addMicros)} to tenant "${tenant}".`);
          if (before.availableMicros === undefined) {
            out(`Tenant "${tenant}" was unlimited; it is now limited to its credit.`);
          }
        }
      }
      const after = addMicros !== undefined ? await store.getTenant(tenant) : before;
      if (!after) throw new Error(`tenant "${tenant}" not found`);
      const unlimited = after.availableMicros === undefined;
      if (json) {
        out(
          JSON.stringify({
            tenantId: tenant,
            unlimited,
            availableUsd: unlimited ? null : usdNumber(after.availableMicros ?? 0),
            heldUsd: usdNumber(after.heldMicros ?? 0),
            chargedUsd: usdNumber(after.chargedMicros ?? 0),
            refundedUsd: usdNumber(after.refundedMicros ?? 0),
            ...(addMicros !== undefined ? { addedUsd: usdNumber(addMicros) } : {}),
          }),
        );
      } else {
        out(
          table([
            [`Tenant "${tenant}"`, ''],
            ['  available', unlimited ? 'unlimited' : usd(after.availableMicros ?? 0)],
            ['  held', usd(after.heldMicros ?? 0)],
            ['  charged', usd(after.chargedMicros ?? 0)],
            ['  refunded', usd(after.refundedMicros ?? 0)],
          ]),
        );
      }
      return 0;
    }

    case 'tenants': {
      const all = await store.listTenants();
      if (json) {
        out(
          JSON.stringify(
            all.map((t) => ({
              tenantId: t.tenantId,
              name: t.name,
              createdAt: t.createdAt,
              unlimited: t.availableMicros === undefined,
              availableUsd: t.availableMicros === undefined ? null : usdNumber(t.availableMicros),
              heldUsd: usdNumber(t.heldMicros ?? 0),
              chargedUsd: usdNumber(t.chargedMicros ?? 0),
              refundedUsd: usdNumber(t.refundedMicros ?? 0),
            })),
          ),
        );
      } else if (all.length === 0) out('No tenants.');
      else {
        out(
          table([
            ['TENANT', 'AVAILABLE', 'HELD', 'CHARGED', 'CREATED'],
            ...all.map((t) => [
              t.tenantId,
              t.availableMicros === undefined ? 'unlimited' : usd(t.availableMicros),
              usd(t.heldMicros ?? 0),
              usd(t.chargedMicros ?? 0),
              t.createdAt,
            ]),
          ]),
        );
      }
      return 0;
    }
  }
  throw new UsageError(`unknown command "${command}"`);
}

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`keys: ${error.message}\n\n${USAGE}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`keys: ${errorMessage(error)}\n`);
      process.exitCode = 1;
    }
  },
);
