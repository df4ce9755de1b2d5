/**
 * cdk-nag AwsSolutions checks, REPORT ONLY for now: the test prints a summary of the rule ids found and fails only
 * if the checks did not run. Making the app clean (fixing or acknowledging each finding with
 * `Validations.of(construct).acknowledge(...)`) is the hardening issue; it then turns this into an assertion.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { buildTestApp } from './synth.js';

interface ValidationReport {
  pluginReports: {
    pluginName: string;
    violations: { ruleName: string; description: string; severity: string; violatingConstructs: unknown[] }[];
  }[];
}

test('AwsSolutions findings (report only)', () => {
  // Report instead of throwing on findings; the report lands in the assembly's validation-report.json.
  const { app } = buildTestApp({ '@aws-cdk/core:failSynthOnValidationErrors': false });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  const assembly = app.synth();
  const report = JSON.parse(
    readFileSync(path.join(assembly.directory, 'validation-report.json'), 'utf8'),
  ) as ValidationReport;

  const nag = report.pluginReports.find((r) => r.pluginName === 'AwsSolutions');
  expect(nag).toBeDefined();

  // `AwsSolutions-IAM5[Action::s3:List*]` and friends are counted under their rule id.
  const byRule = new Map<string, { severity: string; description: string; count: number }>();
  for (const v of nag?.violations ?? []) {
    const rule = v.ruleName.replace(/\[.*$/, '');
    const entry = byRule.get(rule) ?? { severity: v.severity, description: v.description, count: 0 };
    entry.count += v.violatingConstructs.length;
    byRule.set(rule, entry);
  }
  const lines = [...byRule.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([rule, e]) => `${rule.padEnd(20)} ${e.severity.padEnd(8)} ${String(e.count).padStart(3)}  ${e.description}`);
  console.log(`cdk-nag AwsSolutions: ${byRule.size} rules with findings\n${lines.join('\n')}`);
});
