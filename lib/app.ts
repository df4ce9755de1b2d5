/**
 * Builds the service's stacks into an App. bin/app.ts (the CDK entry point) and the infra tests both call
 * `buildStacks`, so the tests check exactly what `cdk synth` produces. Settings come from CDK context
 * (cdk.json defaults, overridable with `cdk synth -c stage=prod`).
 */
import { type App, type Environment, RemovalPolicy, Tags } from 'aws-cdk-lib';
import type { Node } from 'constructs';
import { StatefulStack } from './stateful-stack.js';
import { StatelessStack } from './stateless-stack.js';
import type { Packaging } from './vision-function.js';

export interface AppSettings {
  /** Deployment stage: part of the stack names and the API Gateway stage name. */
  readonly stage: string;
  /** Runs estimated above this many USD need explicit confirmation (SERVICE_COST_CONFIRMATION_THRESHOLD_USD). */
  readonly costConfirmationThresholdUsd: number;
  /** DESTROY instead of RETAIN for tables, bucket, queues and log groups: throwaway dev stages only. */
  readonly destroyOnRemoval: boolean;
  /** How the worker ships its native modules (see lib/vision-function.ts). */
  readonly workerPackaging: Packaging;
}

function contextString(node: Node, key: string): string | undefined {
  const value: unknown = node.tryGetContext(key);
  if (value === undefined || value === null) return undefined;
  return String(value);
}

/** Reads the settings from context; values given with `-c key=value` arrive as strings and are parsed here. */
export function readSettings(node: Node): AppSettings {
  const stage = contextString(node, 'stage') ?? 'dev';
  if (!/^[a-z][a-z0-9-]{0,19}$/.test(stage)) {
    throw new Error(`context "stage" must be lower-case letters, digits and dashes (max 20), got "${stage}"`);
  }
  const thresholdText = contextString(node, 'costConfirmationThresholdUsd') ?? '1';
  const costConfirmationThresholdUsd = Number(thresholdText);
  if (
    thresholdText.trim() === '' ||
    !Number.isFinite(costConfirmationThresholdUsd) ||
    costConfirmationThresholdUsd < 0
  ) {
    throw new Error(`context "costConfirmationThresholdUsd" must be a non-negative number, got "${thresholdText}"`);
  }
  const destroyText = contextString(node, 'destroyOnRemoval') ?? 'false';
  if (destroyText !== 'true' && destroyText !== 'false') {
    throw new Error(`context "destroyOnRemoval" must be true or false, got "${destroyText}"`);
  }
  const workerPackaging = contextString(node, 'workerPackaging') ?? 'image';
  if (workerPackaging !== 'image' && workerPackaging !== 'zip') {
    throw new Error(`context "workerPackaging" must be "image" or "zip", got "${workerPackaging}"`);
  }
  return { stage, costConfirmationThresholdUsd, destroyOnRemoval: destroyText === 'true', workerPackaging };
}

/** Environment variables of shared/config.ts that the stacks set on every function. */
export function serviceEnvironment(settings: AppSettings): Record<string, string> {
  return { SERVICE_COST_CONFIRMATION_THRESHOLD_USD: String(settings.costConfirmationThresholdUsd) };
}

export interface VisionStacks {
  readonly stateful: StatefulStack;
  readonly stateless: StatelessStack;
}

export function buildStacks(app: App, env?: Environment): VisionStacks {
  const settings = readSettings(app.node);
  const removalPolicy = settings.destroyOnRemoval ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
  const stackEnv = env ? { env } : {};

  const stateful = new StatefulStack(app, `VisionStateful-${settings.stage}`, {
    ...stackEnv,
    description: `Vision analysis service (${settings.stage}): tables, uploads bucket, run queue`,
    removalPolicy,
  });
  const stateless = new StatelessStack(app, `VisionStateless-${settings.stage}`, {
    ...stackEnv,
    description: `Vision analysis service (${settings.stage}): API, functions, worker`,
    resources: stateful,
    stageName: settings.stage,
    serviceEnvironment: serviceEnvironment(settings),
    workerPackaging: settings.workerPackaging,
    logRemovalPolicy: removalPolicy,
  });
  stateless.addStackDependency(stateful);

  for (const stack of [stateful, stateless]) {
    Tags.of(stack).add('service', 'vision-analysis');
    Tags.of(stack).add('stage', settings.stage);
  }
  return { stateful, stateless };
}
