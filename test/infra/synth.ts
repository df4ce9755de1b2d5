/**
 * Builds the app the way bin/app.ts does, with cdk.json's context (feature flags included) so tests see what
 * `cdk synth` produces, but without esbuild bundling (`aws:cdk:bundling-stacks` = []): fast, and independent of
 * whether every handler file compiles.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { App, type CfnElement, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildStacks, type VisionStacks } from '../../lib/app.js';
import { PROJECT_ROOT } from '../../lib/vision-function.js';

export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  return cdkJson.context;
}

export function buildTestApp(context: Record<string, unknown> = {}): VisionStacks & { app: App } {
  const app = new App({
    context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context },
  });
  return { app, ...buildStacks(app) };
}

const templates = new WeakMap<Stack, Template>();

/**
 * A stack's template, read once per stack: `Template.fromStack` reads it from the assembly again and checks the whole
 * template for cyclic dependencies at every call (~1 s for this app), and the tests read the same few stacks dozens of
 * times. No test changes an app after reading it.
 */
export function templateOf(stack: Stack): Template {
  let template = templates.get(stack);
  if (!template) {
    template = Template.fromStack(stack);
    templates.set(stack, template);
  }
  return template;
}

/** Logical id of a construct's CloudFormation resource (its default child, or the construct itself). */
export function logicalIdOf(stack: Stack, construct: { node: { defaultChild?: unknown } }): string {
  const element = (construct.node.defaultChild ?? construct) as CfnElement;
  return stack.resolve(element.logicalId) as string;
}

/** True when a template value refers to the resource with this logical id (Ref, GetAtt or a cross-stack output). */
export function refersTo(value: unknown, logicalId: string): boolean {
  return JSON.stringify(value).includes(logicalId);
}
