/**
 * cdk-nag AwsSolutions checks: the app must have NO unacknowledged finding, error or warning. Each accepted finding
 * is acknowledged where its construct is created (`Validations.of(construct).acknowledge({ id, reason })`, the cdk-nag 3
 * replacement of NagSuppressions), with the reason written next to it. Acknowledged findings do not appear in the
 * validation report, so any violation in it is a new finding: fix it, or acknowledge it with a precise reason.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { type App, Stack, Validations } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import { buildTestApp } from './synth.js';

interface ValidationReport {
  pluginReports: {
    pluginName: string;
    violations: {
      ruleName: string;
      description: string;
      severity?: string;
      violatingConstructs: { constructPath?: string; resourceLogicalId?: string }[];
    }[];
  }[];
}

/**
 * Every unacknowledged AwsSolutions finding of the app built with `context`, as `rule severity path` lines. A clean
 * app has no plugin report at all, so `extend` may add a known violation to prove the checks ran.
 */
function nagFindings(context: Record<string, unknown> = {}, extend?: (app: App) => void): string[] {
  // Report instead of throwing on findings; the report lands in the assembly's validation-report.json.
  const { app } = buildTestApp({ '@aws-cdk/core:failSynthOnValidationErrors': false, ...context });
  extend?.(app);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  const assembly = app.synth();
  const report = JSON.parse(
    readFileSync(path.join(assembly.directory, 'validation-report.json'), 'utf8'),
  ) as ValidationReport;
  const nag = report.pluginReports.find((r) => r.pluginName === 'AwsSolutions');
  return (nag?.violations ?? []).flatMap((v) =>
    v.violatingConstructs.map(
      (c) => `${v.ruleName} ${v.severity ?? ''} ${c.constructPath ?? c.resourceLogicalId ?? '?'}: ${v.description}`,
    ),
  );
}

test('the AwsSolutions checks run (an unlogged bucket added to the app is reported)', () => {
  const findings = nagFindings({}, (app) => new s3.Bucket(new Stack(app, 'NagCanary'), 'Unlogged'));
  expect(findings.some((f) => f.startsWith('AwsSolutions-S1 ') && f.includes('NagCanary/Unlogged'))).toBe(true);
});

// cdk-nag 3.0.2's AwsSolutions pack checks SNS topics with SNS3 (TLS-only publishing) only: its SNS2 (encryption) rule
// is gone from the pack. The alarm topic's KMS encryption is asserted in stacks.test.ts ('alarms and dashboard').
test('the SNS check runs (a topic without encryption or a TLS policy is reported: SNS3)', () => {
  const findings = nagFindings({}, (app) => new sns.Topic(new Stack(app, 'NagCanary'), 'Plain'));
  expect(findings.some((f) => f.startsWith('AwsSolutions-SNS3 ') && f.includes('NagCanary/Plain'))).toBe(true);
});

test('AwsSolutions: no unacknowledged error or warning (default settings)', () => {
  expect(nagFindings()).toEqual([]);
});

test('AwsSolutions: no unacknowledged finding with bedrock, textract and an API-key provider enabled', () => {
  expect(nagFindings({ providers: 'bedrock,textract,openai,local' })).toEqual([]);
});

test('AwsSolutions: no unacknowledged finding with an alarm e-mail subscription and a custom stage throttle', () => {
  expect(nagFindings({ alarmEmail: 'oncall@example.com', stageThrottleRps: '100', stageThrottleBurst: '200' })).toEqual(
    [],
  );
});

test('AwsSolutions: no unacknowledged finding with destroyOnRemoval and a plain Bedrock model id', () => {
  expect(
    nagFindings({ destroyOnRemoval: 'true', providers: 'bedrock', bedrockModelId: 'amazon.nova-lite-v1:0' }),
  ).toEqual([]);
});
