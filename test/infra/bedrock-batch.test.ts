/**
 * Bedrock batch inference in the stack (lib/bedrock-batch.ts): the service role Bedrock assumes (trusted for this
 * account's jobs only, S3 under the jobs' prefix only, the configured model), and the batcher's rights (create, read
 * and stop jobs, pass that role to Bedrock only, list the jobs' output), present only when bedrock runs a model its
 * batch interface takes; cdk-nag clean.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { BEDROCK_BATCH_ACTIONS } from '../../lib/bedrock-batch.js';
import type { StatelessStack } from '../../lib/stateless-stack.js';
import { bedrockBatch } from '../../shared/infra/resources.js';
import { buildTestApp, logicalIdOf, refersTo, templateOf } from './synth.js';

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}
type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

const actionsOf = (s: Statement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const resourcesOf = (stack: StatelessStack) => templateOf(stack).toJSON().Resources as Resources;

/** The Allow statements of the policies attached to a role (by its logical id). */
function statementsOfRole(stack: StatelessStack, roleId: string): Statement[] {
  return Object.values(resourcesOf(stack))
    .filter((r) => r.Type === 'AWS::IAM::Policy' && refersTo(r.Properties.Roles, roleId))
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
    .filter((s) => s.Effect === 'Allow');
}

function batcherStatements(stack: StatelessStack): Statement[] {
  const fn = resourcesOf(stack)[logicalIdOf(stack, stack.functions.batcher)]?.Properties ?? {};
  return statementsOfRole(stack, (fn.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0]);
}

const serviceRoles = (stack: StatelessStack) =>
  Object.entries(resourcesOf(stack)).filter(
    ([id, r]) => r.Type === 'AWS::IAM::Role' && id.startsWith(bedrockBatch.roleId),
  );

describe('with bedrock on Nova Lite (a model its batch interface takes)', () => {
  const { stateless } = buildTestApp({ providers: 'bedrock,local', bedrockModelId: 'us.amazon.nova-lite-v1:0' });
  const [[roleId, role] = ['', { Type: '', Properties: {} as Record<string, unknown> }]] = serviceRoles(stateless);

  test('one service role, assumed by Bedrock for this account and its model invocation jobs only', () => {
    expect(serviceRoles(stateless)).toHaveLength(1);
    const trust = (role.Properties.AssumeRolePolicyDocument as { Statement: Array<Statement & { Principal: unknown }> })
      .Statement;
    expect(trust).toHaveLength(1);
    expect(trust[0]?.Principal).toEqual({ Service: 'bedrock.amazonaws.com' });
    expect(trust[0]?.Condition?.StringEquals?.['aws:SourceAccount']).toEqual({ Ref: 'AWS::AccountId' });
    expect(JSON.stringify(trust[0]?.Condition?.ArnLike?.['aws:SourceArn'])).toContain(':model-invocation-job/*');
  });

  test("the role reads and writes S3 under the jobs' prefix only, and invokes the configured model", () => {
    const statements = statementsOfRole(stateless, roleId);
    const s3 = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('s3:')));
    expect(s3.flatMap(actionsOf).sort()).toEqual(['s3:GetObject', 's3:ListBucket', 's3:PutObject']);
    const objects = s3.find((s) => actionsOf(s).includes('s3:GetObject'));
    expect(JSON.stringify(objects?.Resource)).toContain(`/${bedrockBatch.prefix}*`);
    const list = s3.find((s) => actionsOf(s).includes('s3:ListBucket'));
    expect(list?.Condition?.StringLike?.['s3:prefix']).toEqual([`${bedrockBatch.prefix}*`]);
    const bedrock = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('bedrock:')));
    expect(bedrock.flatMap(actionsOf)).toEqual(['bedrock:InvokeModel', 'bedrock:InvokeModel']);
    expect(JSON.stringify(bedrock.map((s) => s.Resource))).toContain('inference-profile/us.amazon.nova-lite-v1:0');
  });

  test('the batcher creates, reads and stops jobs, passes that role to Bedrock only, and knows its ARN', () => {
    const statements = batcherStatements(stateless);
    const jobs = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('bedrock:')));
    expect(jobs.flatMap(actionsOf).sort()).toEqual([...BEDROCK_BATCH_ACTIONS].sort());
    for (const statement of jobs) expect(JSON.stringify(statement.Resource)).toContain(':model-invocation-job/*');
    // No model invocation of its own: the service role invokes the model.
    expect(statements.flatMap(actionsOf)).not.toContain('bedrock:InvokeModel');

    const pass = statements.filter((s) => actionsOf(s).includes('iam:PassRole'));
    expect(pass).toHaveLength(1);
    expect(refersTo(pass[0]?.Resource, roleId)).toBe(true);
    expect(pass[0]?.Condition).toEqual({ StringEquals: { 'iam:PassedToService': 'bedrock.amazonaws.com' } });

    const list = statements.find((s) => actionsOf(s).includes('s3:ListBucket'));
    expect(list?.Condition?.StringLike?.['s3:prefix']).toEqual([`${bedrockBatch.prefix}*`]);
    const fn = resourcesOf(stateless)[logicalIdOf(stateless, stateless.functions.batcher)]?.Properties ?? {};
    const variables = (fn.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(refersTo(variables[bedrockBatch.roleEnvVar], roleId)).toBe(true);
  });

  test('no other function may pass the role or touch batch jobs', () => {
    for (const handler of Object.keys(stateless.functions) as Array<keyof typeof stateless.functions>) {
      if (handler === 'batcher') continue;
      const fn = resourcesOf(stateless)[logicalIdOf(stateless, stateless.functions[handler])]?.Properties ?? {};
      const statements = statementsOfRole(stateless, (fn.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0]);
      const actions = statements.flatMap(actionsOf);
      expect([handler, actions.filter((a) => a === 'iam:PassRole' || a.includes('ModelInvocationJob'))]).toEqual([
        handler,
        [],
      ]);
    }
  });

  test('AwsSolutions: no unacknowledged finding', () => {
    const { app } = buildTestApp({
      '@aws-cdk/core:failSynthOnValidationErrors': false,
      providers: 'bedrock,local',
      bedrockModelId: 'us.amazon.nova-lite-v1:0',
    });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    const assembly = app.synth();
    const report = JSON.parse(readFileSync(path.join(assembly.directory, 'validation-report.json'), 'utf8')) as {
      pluginReports: Array<{
        pluginName: string;
        violations: Array<{ ruleName: string; violatingConstructs: unknown[] }>;
      }>;
    };
    const nag = report.pluginReports.find((r) => r.pluginName === 'AwsSolutions');
    expect(nag?.violations.map((v) => [v.ruleName, v.violatingConstructs]) ?? []).toEqual([]);
  });
});

describe('without a batch-capable Bedrock model', () => {
  test.each([
    ['openai,local', undefined],
    // Nova 2 Lite is not in the supported-models table as read: its batch runs are called normally.
    ['bedrock,local', 'us.amazon.nova-2-lite-v1:0'],
  ])('providers %s (%s): no service role, no job rights', (providers, bedrockModelId) => {
    const { stateless } = buildTestApp({ providers, ...(bedrockModelId ? { bedrockModelId } : {}) });
    expect(serviceRoles(stateless)).toEqual([]);
    const actions = batcherStatements(stateless).flatMap(actionsOf);
    expect(actions.filter((a) => a === 'iam:PassRole' || a.startsWith('bedrock:'))).toEqual([]);
  });
});
