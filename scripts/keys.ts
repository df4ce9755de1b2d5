/**
 * `npm run keys -- <command>`: tenants, API keys and credit, against the local stack or a deployment's tables.
 * docs/keys.md is the manual; docs/decisions.md#the-keys-clis-targets how the target and the usage plan are chosen.
 * Exit codes: 0 ok, 2 usage error, 1 failure; messages go to stderr, results to stdout.
 * Over 400 lines: one CLI, its every command parsed, validated and run against either target here; splitting it
 * would scatter one user-facing tool (its helpers already live in scripts/keys/).
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { APIGatewayClient } from '@aws-sdk/client-api-gateway';
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { tables } from '../shared/infra/resources.js';
import { gatewaySettings, SCOPES, type Scope } from '../shared/infra/routes.js';
import { MICROS_PER_USD, type Micros } from '../shared/money.js';
import { absorbedByTenant } from '../shared/store/absorbed-report.js';
import type { ApiKeyRecord, UsagePlanKey } from '../shared/store/tenants.js';
import * as store from '../shared/store/tenants.js';
import { backfillUsage } from '../shared/store/usage.js';
import { readDeployment, stageOf } from './keys/stack-outputs.js';
import {
  attachUsagePlanKey,
  deleteUndone,
  deleteUsagePlanKey,
  issueUsagePlanKey,
  ownApiKeys,
  PRUNE_MIN_AGE_MS,
  usagePlanKeyIds,
} from './keys/usage-plan.js';

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
  sync-usage-plan [--dry-run]            Give every active key its usage-plan key (keys created before usage plans,
                                         or after the plan was recreated), delete those of revoked keys and unused
                                         ones of this tool (needs a usage plan: --stack or --usage-plan-id)
  usage-backfill                         Count runs created before the usage counters into them (once, after
                                         upgrading; safe while the service runs and when run again). Needs the
                                         Runs and Usage tables: --local, --stack, or RUNS_TABLE and USAGE_TABLE
  absorbed [--from D] [--to D]           What the service absorbed (prices over estimates) per tenant, from the
                                         daily usage counters (UTC days, default: the last 30). Needs the Usage table
  help                                   This text

Target (one of):
  --local [--state-file F]               The running local stack (default when .local-data/stack.json exists)
  --stack S                              A deployment: S is its stage (prod) or either stack's name
                                         (VisionStateful-prod); tables and usage plan from the stacks' outputs
  --tenants-table X --keys-table Y       Deployed tables (or env TENANTS_TABLE / API_KEYS_TABLE)
    [--usage-plan-id P]                  and its usage plan (or env VISION_USAGE_PLAN_ID)
  --endpoint URL                         DynamoDB endpoint for the table target (e.g. LocalStack)
  --region R                             AWS region for a deployment (default: AWS_REGION / your AWS config)

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
  'usage-plan-id': { type: 'string' },
  'dry-run': { type: 'boolean' },
  from: { type: 'string' },
  to: { type: 'string' },
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
  'usage-plan-id',
];
const commandOptions: Record<string, OptionName[]> = {
  create: ['tenant', 'scopes', 'label', 'credit-usd'],
  list: ['tenant'],
  revoke: ['tenant', 'key-id'],
  credit: ['tenant', 'add-usd'],
  tenants: [],
  'sync-usage-plan': ['dry-run'],
  'usage-backfill': [],
  absorbed: ['from', 'to'],
};

/** Environment variable naming the usage plan for the table target (the `--usage-plan-id` flag wins). */
const USAGE_PLAN_ENV = 'VISION_USAGE_PLAN_ID';

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

export interface Target {
  /** One line for stderr: what the tool talks to. */
  description: string;
  kind: 'local' | 'stack' | 'tables';
  /** The deployment's usage plan; client keys get API Gateway keys attached to it. Undefined: none (local). */
  usagePlanId?: string;
  /** True when the table target talks to an emulator (--endpoint). */
  emulated?: boolean;
}

/** Rejects contradictory target options before anything is read or written. */
function checkTargetOptions(values: Values): void {
  const tableFlagGiven = values['tenants-table'] !== undefined || values['keys-table'] !== undefined;
  if (values.stack !== undefined) {
    const others = (['local', 'state-file', 'tenants-table', 'keys-table', 'endpoint', 'usage-plan-id'] as const)
      .filter((name) => values[name] !== undefined)
      .map((name) => `--${name}`);
    if (others.length > 0) {
      throw new UsageError(
        `--stack reads the tables and the usage plan from the stacks' outputs; it cannot be combined with ${others.join(', ')}` +
          ' (for LocalStack, set AWS_ENDPOINT_URL instead of --endpoint)',
      );
    }
    if (stageOf(str(values, 'stack') ?? '') === null) {
      throw new UsageError(
        `--stack "${str(values, 'stack') ?? ''}": expected a stage (e.g. prod) or a stack name (VisionStateful-prod, VisionStateless-prod)`,
      );
    }
  }
  if (values.local === true && (tableFlagGiven || values.endpoint !== undefined)) {
    throw new UsageError('--local cannot be combined with --tenants-table, --keys-table or --endpoint');
  }
  if (values['state-file'] !== undefined && (tableFlagGiven || values.endpoint !== undefined)) {
    throw new UsageError('--state-file selects the local stack; it cannot be combined with a table target');
  }
  if ((values.local === true || values['state-file'] !== undefined) && values['usage-plan-id'] !== undefined) {
    throw new UsageError("--usage-plan-id names a deployment's usage plan; the local stack has none");
  }
}

/** Resolves the target and points the AWS SDK and the stores at it (through the environment they read). */
async function applyTarget(values: Values): Promise<Target> {
  checkTargetOptions(values);
  const region = str(values, 'region');
  if (region) process.env.AWS_REGION = region;

  const stackArg = str(values, 'stack');
  if (stackArg !== undefined) {
    const stage = stageOf(stackArg) as string;
    const deployment = await readDeployment(clients.cloudFormation(), stage);
    process.env[tables.tenants.envVar] = deployment.tenantsTable;
    process.env[tables.apiKeys.envVar] = deployment.keysTable;
    if (deployment.runsTable) process.env[tables.runs.envVar] = deployment.runsTable;
    if (deployment.usageTable) process.env[tables.usage.envVar] = deployment.usageTable;
    return {
      kind: 'stack',
      usagePlanId: deployment.usagePlanId,
      description:
        `stage ${stage} (${deployment.stacks.stateful}, ${deployment.stacks.stateless}): tables ` +
        `${deployment.tenantsTable}, ${deployment.keysTable}; usage plan ${deployment.usagePlanId}` +
        (deployment.apiUrl ? `; API ${deployment.apiUrl}` : ''),
    };
  }

  const tenantsFlag = str(values, 'tenants-table');
  const keysFlag = str(values, 'keys-table');
  const tableFlagGiven = tenantsFlag !== undefined || keysFlag !== undefined;
  const tenantsEnv = process.env[tables.tenants.envVar] || undefined;
  const keysEnv = process.env[tables.apiKeys.envVar] || undefined;
  const stateFile = str(values, 'state-file') ? resolve(str(values, 'state-file') as string) : defaultStateFile();

  const useLocal =
    values.local === true ||
    values['state-file'] !== undefined ||
    (!tableFlagGiven &&
      tenantsEnv === undefined &&
      keysEnv === undefined &&
      values['usage-plan-id'] === undefined &&
      existsSync(stateFile));

  if (useLocal) {
    const state = readLocalState(stateFile);
    const tenantsTable = state.resources.tables.tenants;
    const keysTable = state.resources.tables.apiKeys;
    if (!tenantsTable || !keysTable) throw new Error(`${stateFile} lacks resources.tables.tenants or .apiKeys`);
    process.env.AWS_ENDPOINT_URL_DYNAMODB = state.endpoints.dynamodb;
    process.env[tables.tenants.envVar] = tenantsTable;
    process.env[tables.apiKeys.envVar] = keysTable;
    for (const name of ['runs', 'usage'] as const) {
      const table = state.resources.tables[name];
      if (table) process.env[tables[name].envVar] = table;
    }
    // DynamoDB Local accepts any credentials, but the SDK needs some, and a region.
    process.env.AWS_REGION ??= 'us-east-1';
    if (!process.env.AWS_ACCESS_KEY_ID && !process.env.AWS_PROFILE) {
      process.env.AWS_ACCESS_KEY_ID = 'local';
      process.env.AWS_SECRET_ACCESS_KEY = 'local';
    }
    return {
      kind: 'local',
      description: `local stack ${state.baseUrl ?? ''} (${state.endpoints.dynamodb})`.replace('  ', ' '),
    };
  }

  const tenantsTable = tenantsFlag ?? tenantsEnv;
  const keysTable = keysFlag ?? keysEnv;
  if (!tenantsTable || !keysTable) {
    throw new UsageError(
      tableFlagGiven || tenantsEnv || keysEnv
        ? 'both tables are needed: --tenants-table and --keys-table (or TENANTS_TABLE and API_KEYS_TABLE)'
        : 'no target: start the local stack (`npm start`) or use --local, name a deployment with --stack, or name ' +
            'deployed tables with --tenants-table and --keys-table (or TENANTS_TABLE and API_KEYS_TABLE)',
    );
  }
  process.env[tables.tenants.envVar] = tenantsTable;
  process.env[tables.apiKeys.envVar] = keysTable;
  const endpoint = str(values, 'endpoint');
  if (endpoint) process.env.AWS_ENDPOINT_URL_DYNAMODB = endpoint;
  const usagePlanId = (str(values, 'usage-plan-id') ?? process.env[USAGE_PLAN_ENV])?.trim() || undefined;
  return {
    kind: 'tables',
    ...(usagePlanId ? { usagePlanId } : {}),
    ...(endpoint ? { emulated: true } : {}),
    description:
      `tables ${tenantsTable}, ${keysTable}${endpoint ? ` at ${endpoint}` : ''}` +
      (usagePlanId ? `; usage plan ${usagePlanId}` : '; no usage plan'),
  };
}

/** AWS clients, created on first use (after the target has set the region); tests replace their `send`. */
export const clients = {
  apiGatewayClient: undefined as APIGatewayClient | undefined,
  cloudFormationClient: undefined as CloudFormationClient | undefined,
  apiGateway(): APIGatewayClient {
    // API Gateway's control plane allows 10 requests/s per account (CreateApiKey and DeleteApiKey 5/s): adaptive
    // retries slow a long sync down instead of failing it.
    this.apiGatewayClient ??= new APIGatewayClient({ maxAttempts: 8, retryMode: 'adaptive' });
    return this.apiGatewayClient;
  },
  cloudFormation(): CloudFormationClient {
    this.cloudFormationClient ??= new CloudFormationClient({});
    return this.cloudFormationClient;
  },
};

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

/** Turns a finished step's error into text (the error name for AWS errors). */
const messageOf = (error: unknown) => errorMessage(error);

interface SyncAction {
  keyId: string;
  tenantId: string;
  /** What was (or, with --dry-run, would be) done. */
  action: 'created' | 'attached' | 'replaced' | 'deleted' | 'pruned' | 'skipped';
  usagePlanKeyId?: string;
  note?: string;
}

/**
 * `sync-usage-plan`: brings the usage plan in line with the table. Active keys without a usage-plan key get one;
 * active keys whose API key is not attached to this plan (the plan was recreated) are attached, or given a new API key
 * if theirs is gone; revoked keys' API keys are deleted; API keys this tool made for this plan that no active key
 * names (left by a create whose clean-up failed) are deleted once older than PRUNE_MIN_AGE_MS.
 */
async function syncUsagePlan(
  usagePlanId: string,
  dryRun: boolean,
): Promise<{ checked: number; unchanged: number; actions: SyncAction[]; failures: string[] }> {
  const api = clients.apiGateway();
  // Only API keys older than the scan (by a margin) may be pruned: one created during a long sync may belong to a
  // client key the scan did not see.
  const cutoff = Date.now() - PRUNE_MIN_AGE_MS;
  const records = (await store.scanApiKeys()).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  const attached = await usagePlanKeyIds(api, usagePlanId);
  const actions: SyncAction[] = [];
  const failures: string[] = [];
  const referenced = new Set<string>();
  let unchanged = 0;

  const issueFor = async (record: ApiKeyRecord, replacing?: string): Promise<UsagePlanKey | null> => {
    const issued = await issueUsagePlanKey(api, usagePlanId, { keyId: record.keyId, tenantId: record.tenantId });
    referenced.add(issued.id);
    if (await store.setUsagePlanKey(record.keyHash, issued, replacing)) return issued;
    // Revoked or synced by someone else meanwhile: this API key is not needed.
    await deleteUndone(api, issued.id, `key ${record.keyId} changed while it was synced`);
    return null;
  };

  for (const record of records) {
    const base = { keyId: record.keyId, tenantId: record.tenantId };
    try {
      if (record.status === 'active' && !record.usagePlanKeyId) {
        if (dryRun) actions.push({ ...base, action: 'created' });
        else {
          const issued = await issueFor(record);
          actions.push(
            issued
              ? { ...base, action: 'created', usagePlanKeyId: issued.id }
              : { ...base, action: 'skipped', note: 'changed meanwhile' },
          );
        }
      } else if (record.status === 'active' && record.usagePlanKeyId) {
        const id = record.usagePlanKeyId;
        referenced.add(id);
        if (attached.has(id)) unchanged += 1;
        else if (dryRun) actions.push({ ...base, action: 'attached', usagePlanKeyId: id, note: 'or replaced if gone' });
        else {
          try {
            await attachUsagePlanKey(api, usagePlanId, id);
            actions.push({ ...base, action: 'attached', usagePlanKeyId: id });
          } catch (error: unknown) {
            if (!(error instanceof Error && error.name === 'NotFoundException')) throw error;
            // The API key itself is gone (deleted by hand): a new one replaces it.
            const issued = await issueFor(record, id);
            actions.push(
              issued
                ? { ...base, action: 'replaced', usagePlanKeyId: issued.id, note: `API key ${id} was gone` }
                : { ...base, action: 'skipped', note: 'changed meanwhile' },
            );
          }
        }
      } else if (record.usagePlanKeyId) {
        // Revoked, but its API key was not deleted (revoke failed half-way, or the key was revoked without a plan).
        const id = record.usagePlanKeyId;
        if (!dryRun) {
          await deleteUsagePlanKey(api, id);
          await store.clearUsagePlanKey(record.keyHash, id);
        }
        actions.push({ ...base, action: 'deleted', usagePlanKeyId: id });
      } else unchanged += 1;
    } catch (error: unknown) {
      failures.push(`${record.keyId} (tenant "${record.tenantId}"): ${messageOf(error)}`);
    }
  }

  for (const apiKey of await ownApiKeys(api, usagePlanId)) {
    if (!apiKey.id || referenced.has(apiKey.id)) continue;
    if (apiKey.createdDate && apiKey.createdDate.getTime() > cutoff) continue;
    const base = { keyId: apiKey.tags?.['vision:keyId'] ?? '?', tenantId: apiKey.tags?.['vision:tenantId'] ?? '?' };
    try {
      if (!dryRun) await deleteUsagePlanKey(api, apiKey.id);
      actions.push({ ...base, action: 'pruned', usagePlanKeyId: apiKey.id, note: 'no active key uses it' });
    } catch (error: unknown) {
      failures.push(`API key ${apiKey.id}: ${messageOf(error)}`);
    }
  }
  return { checked: records.length, unchanged, actions, failures };
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
  const tenant = ['tenants', 'sync-usage-plan', 'usage-backfill', 'absorbed'].includes(command)
    ? ''
    : tenantOption(values);
  if (
    command === 'sync-usage-plan' &&
    values.stack === undefined &&
    values['usage-plan-id'] === undefined &&
    !process.env[USAGE_PLAN_ENV]
  ) {
    throw new UsageError('sync-usage-plan needs a usage plan: --stack S, or --usage-plan-id P with the table target');
  }
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

  const target = await applyTarget(values);
  if (!json) process.stderr.write(`keys: ${target.description}\n`);
  switch (command) {
    case 'create': {
      const existing = await store.getTenant(tenant);
      if (existing && startCredit !== undefined) {
        throw new Error(
          `tenant "${tenant}" already exists; --credit-usd only sets a new tenant's starting credit ` +
            `(use \`npm run keys -- credit --tenant ${tenant} --add-usd N\`). Nothing was created.`,
        );
      }
      if (!target.usagePlanId && target.kind === 'tables' && !target.emulated) {
        process.stderr.write(
          'WARNING: no usage plan given (--stack, or --usage-plan-id / VISION_USAGE_PLAN_ID): the key gets no ' +
            'usage-plan key, and a deployed API answers it 403 until `npm run keys -- sync-usage-plan` gives it one.\n',
        );
      }
      // The usage-plan key is made first: the client key is stored (and shown) only once it is fully usable, and a
      // failure after the API Gateway key exists deletes it again.
      const newKeyId = store.newKeyId();
      const usagePlanKey = target.usagePlanId
        ? await issueUsagePlanKey(clients.apiGateway(), target.usagePlanId, { keyId: newKeyId, tenantId: tenant })
        : undefined;
      let created: Awaited<ReturnType<typeof store.createApiKey>>;
      try {
        if (!existing) {
          await store.ensureTenant(tenant, startCredit !== undefined ? { availableMicros: startCredit } : {});
        }
        created = await store.createApiKey(tenant, {
          scopes,
          label,
          keyId: newKeyId,
          ...(usagePlanKey ? { usagePlanKey } : {}),
        });
      } catch (error: unknown) {
        if (usagePlanKey) {
          await deleteUndone(clients.apiGateway(), usagePlanKey.id, `storing the key failed (${messageOf(error)})`);
        }
        throw error;
      }
      const { key, record } = created;
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
            ...(record.usagePlanKeyId ? { usagePlanKeyId: record.usagePlanKeyId } : {}),
          }),
        );
      } else {
        if (!existing) {
          out(`Created tenant "${tenant}" (credit: ${startCredit !== undefined ? usd(startCredit) : 'unlimited'})`);
        }
        out(
          `Created key ${record.keyId} for tenant "${tenant}" (scopes: ${record.scopes.join(',')}; label: "${label}")`,
        );
        if (record.usagePlanKeyId) {
          out(
            `Attached usage-plan key ${record.usagePlanKeyId} to usage plan ${target.usagePlanId} ` +
              `(${gatewaySettings.throttle.ratePerSecond} rps, burst ${gatewaySettings.throttle.burst} for this key)`,
          );
        }
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
          // The id only: the value is what the authorizer hands API Gateway, and is never printed.
          ...(k.usagePlanKeyId ? { usagePlanKeyId: k.usagePlanKeyId } : {}),
        }))
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
      if (json) out(JSON.stringify(keys));
      else if (keys.length === 0) out(`No keys for tenant "${tenant}".`);
      else {
        out(
          table([
            ['KEY ID', 'STATUS', 'CREATED', 'REVOKED', 'USAGE-PLAN KEY', 'SCOPES', 'LABEL'],
            ...keys.map((k) => [
              k.keyId,
              k.status,
              k.createdAt,
              k.revokedAt ?? '-',
              k.usagePlanKeyId ?? '-',
              k.scopes.join(','),
              k.label,
            ]),
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
      // Revoked in the table first (the authorizer refuses it from now on); then its usage-plan key goes, which also
      // stops a cached authorizer answer from working (API Gateway answers 403 for a deleted usage-plan key). The
      // item is read again consistently: the index the lookup used can lag behind a recent sync.
      const current = (await store.getApiKeyByHash(record.keyHash)) ?? record;
      let usagePlanKeyDeleted: string | undefined;
      if (current.usagePlanKeyId) {
        try {
          await deleteUsagePlanKey(clients.apiGateway(), current.usagePlanKeyId);
          await store.clearUsagePlanKey(current.keyHash, current.usagePlanKeyId);
          usagePlanKeyDeleted = current.usagePlanKeyId;
        } catch (error: unknown) {
          throw new Error(
            `key ${keyId} of tenant "${tenant}" is revoked in the table, but deleting its usage-plan key ` +
              `${current.usagePlanKeyId} failed (${messageOf(error)}); run this revoke again, or sync-usage-plan, to finish`,
          );
        }
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
            ...(usagePlanKeyDeleted ? { usagePlanKeyDeleted } : {}),
          }),
        );
      } else {
        out(
          alreadyRevoked
            ? `Key ${keyId} of tenant "${tenant}" was already revoked (${record.revokedAt ?? 'earlier'}).`
            : `Revoked key ${keyId} of tenant "${tenant}".`,
        );
        if (usagePlanKeyDeleted) out(`Deleted its usage-plan key ${usagePlanKeyDeleted}.`);
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
          if (error instanceof ConditionalCheckFailedException) {
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

    case 'sync-usage-plan': {
      const usagePlanId = target.usagePlanId;
      if (!usagePlanId) {
        throw new UsageError(
          'sync-usage-plan needs a usage plan: --stack S, or --usage-plan-id P with the table target',
        );
      }
      const dryRun = values['dry-run'] === true;
      const result = await syncUsagePlan(usagePlanId, dryRun);
      if (json) out(JSON.stringify({ usagePlanId, dryRun, ...result }));
      else {
        out(
          `${dryRun ? 'Dry run: would change' : 'Changed'} ${result.actions.length} of ${result.checked} keys ` +
            `(usage plan ${usagePlanId}; ${result.unchanged} already in order).`,
        );
        if (result.actions.length > 0) {
          out(
            table([
              ['KEY ID', 'TENANT', 'ACTION', 'USAGE-PLAN KEY', 'NOTE'],
              ...result.actions.map((a) => [a.keyId, a.tenantId, a.action, a.usagePlanKeyId ?? '-', a.note ?? '']),
            ]),
          );
        }
      }
      for (const failure of result.failures) process.stderr.write(`keys: failed: ${failure}\n`);
      return result.failures.length > 0 ? 1 : 0;
    }

    case 'usage-backfill': {
      if (!process.env[tables.runs.envVar] || !process.env[tables.usage.envVar]) {
        throw new UsageError(
          'usage-backfill needs the Runs and Usage tables: --local, --stack S, or RUNS_TABLE and USAGE_TABLE',
        );
      }
      const report = await backfillUsage();
      if (json) out(JSON.stringify(report));
      else {
        out(
          `Counted ${report.counted} runs into the usage counters (${report.scanned} uncounted found` +
            `${report.skipped > 0 ? `, ${report.skipped} items that are not runs left alone` : ''}).`,
        );
      }
      return 0;
    }

    case 'absorbed': {
      if (!process.env[tables.usage.envVar]) {
        throw new UsageError('absorbed needs the Usage table: --local, --stack S, or USAGE_TABLE');
      }
      const day = (offsetDays: number) => new Date(Date.now() - offsetDays * 86_400_000).toISOString().slice(0, 10);
      const from = str(values, 'from') ?? day(29);
      const to = str(values, 'to') ?? day(0);
      const lines = await absorbedByTenant(from, to);
      if (json) out(JSON.stringify({ from, to, tenants: lines }));
      else {
        out(`Absorbed ${from} to ${to} (USD): tenant, runs, charged, absorbed, absorbed/charged`);
        for (const l of lines) {
          const share = l.chargedMicros > 0 ? `${((100 * l.absorbedMicros) / l.chargedMicros).toFixed(2)} %` : '—';
          out(`${l.tenantId}\t${l.runs}\t${l.chargedMicros / 1e6}\t${l.absorbedMicros / 1e6}\t${share}`);
        }
      }
      return 0;
    }
  }
  throw new UsageError(`unknown command "${command}"`);
}

/** Runs one command line; returns the exit code (errors are written to stderr). Exported for the unit tests. */
export async function main(argv: string[]): Promise<number> {
  // Clients are made per run, after the target has set the region.
  clients.apiGatewayClient = undefined;
  clients.cloudFormationClient = undefined;
  try {
    return await run(argv);
  } catch (error: unknown) {
    if (error instanceof UsageError) {
      process.stderr.write(`keys: ${error.message}\n\n${USAGE}\n`);
      return 2;
    }
    process.stderr.write(`keys: ${errorMessage(error)}\n`);
    return 1;
  }
}

// Run only as a program (`npm run keys`, `tsx scripts/keys.ts`), not when a test imports the module.
const invokedPath = process.argv[1] && existsSync(process.argv[1]) ? realpathSync(process.argv[1]) : undefined;
if (invokedPath !== undefined && invokedPath === realpathSync(fileURLToPath(import.meta.url))) {
  process.exitCode = await main(process.argv.slice(2));
}
