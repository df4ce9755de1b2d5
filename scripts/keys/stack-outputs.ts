/**
 * `npm run keys -- --stack <stage or stack name>`: finds a deployment's table names and usage plan from the
 * CloudFormation outputs of its two stacks (lib/outputs.ts names them), with DescribeStacks in the usual AWS region.
 */
import { type CloudFormationClient, DescribeStacksCommand, type Stack } from '@aws-sdk/client-cloudformation';
import { STACK_NAME_PREFIX, STATELESS_OUTPUTS, stackNames, tableOutputKey } from '../../lib/outputs.js';

export interface Deployment {
  stage: string;
  stacks: { stateful: string; stateless: string };
  tenantsTable: string;
  keysTable: string;
  usagePlanId: string;
  apiUrl?: string;
  /** For `usage-backfill`; absent from stacks deployed before the outputs named them. */
  runsTable?: string;
  usageTable?: string;
}

const STAGE = /^[a-z][a-z0-9-]{0,19}$/;

/** The stage named by `--stack`: a stage (`prod`) or either stack's name (`VisionStateful-prod`). Null if neither. */
export function stageOf(stackArg: string): string | null {
  for (const prefix of Object.values(STACK_NAME_PREFIX)) {
    if (stackArg.startsWith(prefix)) {
      const stage = stackArg.slice(prefix.length);
      return STAGE.test(stage) ? stage : null;
    }
  }
  return STAGE.test(stackArg) ? stackArg : null;
}

async function outputsOf(client: CloudFormationClient, stackName: string): Promise<Map<string, string>> {
  let stack: Stack | undefined;
  try {
    const out = await client.send(new DescribeStacksCommand({ StackName: stackName }));
    stack = out.Stacks?.[0];
  } catch (error: unknown) {
    if (error instanceof Error && /does not exist/.test(error.message)) stack = undefined;
    else throw error;
  }
  if (!stack) {
    const region = await client.config.region().catch(() => 'unknown');
    throw new Error(`stack ${stackName} not found in region ${region} (check --region / AWS_REGION and the account)`);
  }
  return new Map(
    (stack.Outputs ?? []).flatMap((o) => (o.OutputKey && o.OutputValue ? [[o.OutputKey, o.OutputValue]] : [])),
  );
}

function need(outputs: Map<string, string>, stackName: string, key: string): string {
  const value = outputs.get(key);
  if (!value) {
    throw new Error(
      `stack ${stackName} has no output ${key}: it was deployed by an older version; deploy this one (npx cdk deploy)`,
    );
  }
  return value;
}

/** Reads both stacks' outputs. Throws for a missing stack or output (the message says which). */
export async function readDeployment(client: CloudFormationClient, stage: string): Promise<Deployment> {
  const stacks = stackNames(stage);
  const [stateful, stateless] = await Promise.all([
    outputsOf(client, stacks.stateful),
    outputsOf(client, stacks.stateless),
  ]);
  const apiUrl = stateless.get(STATELESS_OUTPUTS.apiUrl);
  const runsTable = stateful.get(tableOutputKey('runs'));
  const usageTable = stateful.get(tableOutputKey('usage'));
  return {
    stage,
    stacks,
    tenantsTable: need(stateful, stacks.stateful, tableOutputKey('tenants')),
    keysTable: need(stateful, stacks.stateful, tableOutputKey('apiKeys')),
    usagePlanId: need(stateless, stacks.stateless, STATELESS_OUTPUTS.usagePlanId),
    ...(apiUrl ? { apiUrl } : {}),
    ...(runsTable ? { runsTable } : {}),
    ...(usageTable ? { usageTable } : {}),
  };
}
