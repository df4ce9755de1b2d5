/**
 * Builds the service's stacks into an App. bin/app.ts (the CDK entry point) and the infra tests both call
 * `buildStacks`, so the tests check exactly what `cdk synth` produces. Settings come from CDK context (cdk.json
 * defaults, `cdk synth -c key=value` overrides) and `readSettings` validates every one; the table of keys and the
 * variables they become is in docs/decisions.md#deployment-settings-cdk-context.
 */
import { type App, type Environment, RemovalPolicy, Tags, Token } from 'aws-cdk-lib';
import type { Node } from 'constructs';
import { bedrockBaseModelId, bedrockPricingData } from '../shared/infra/bedrock.js';
import { ENV } from '../shared/infra/env.js';
import { runQueue } from '../shared/infra/resources.js';
import { PROVIDER_IDS, type ProviderId } from '../shared/task.js';
import { StatefulStack } from './stateful-stack.js';
import { DEFAULT_STAGE_THROTTLE, PER_KEY_THROTTLE, StatelessStack, type ThrottleLimits } from './stateless-stack.js';
import type { Packaging } from './vision-function.js';

export interface LimitSettings {
  readonly imageMaxBytes?: number;
  readonly pdfMaxBytes?: number;
  readonly pdfMaxPages?: number;
}

export interface AppSettings {
  /** Deployment stage: part of the stack names and the API Gateway stage name. */
  readonly stage: string;
  /** Candidate providers in order (VISION_PROVIDERS). */
  readonly providers: readonly ProviderId[];
  /** Runs estimated above this many USD need explicit confirmation (SERVICE_COST_CONFIRMATION_THRESHOLD_USD). */
  readonly confirmationThresholdUsd: number;
  /** Margin over provider cost in percent (PRICING_MARGIN_PCT); undefined = pricing.json's. */
  readonly marginPct?: number;
  /** Upload limits; unset ones keep shared/config.ts's defaults. */
  readonly limits: LimitSettings;
  readonly runRetentionDays: number;
  readonly uploadRetentionHours: number;
  /** Model id or system-defined inference profile id; undefined = the region's default (`effectiveBedrockModelId`). */
  readonly bedrockModelId?: string;
  /** DESTROY instead of RETAIN for tables, buckets, queues, secret and log groups: throwaway dev stages only. */
  readonly destroyOnRemoval: boolean;
  /** How the worker ships its native modules (see lib/vision-function.ts). */
  readonly workerPackaging: Packaging;
  /** Whether this app creates the account-wide API Gateway CloudWatch Logs role. */
  readonly apiGatewayCloudWatchRole: boolean;
  /** Stage-wide throttle over all keys together (each key has the usage plan's per-key throttle). */
  readonly stageThrottle: ThrottleLimits;
  /** Subscribed to the alarm topic when set. */
  readonly alarmEmail?: string;
}

function contextString(node: Node, key: string): string | undefined {
  const value: unknown = node.tryGetContext(key);
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return value.map(String).join(',');
  return String(value);
}

function readBoolean(node: Node, key: string, fallback: boolean): boolean {
  const text = contextString(node, key) ?? String(fallback);
  if (text !== 'true' && text !== 'false') {
    throw new Error(`context "${key}" must be true or false, got "${text}"`);
  }
  return text === 'true';
}

function readNumber(node: Node, key: string, fallback: number, opts?: { integer?: boolean; min?: number }): number;
function readNumber(
  node: Node,
  key: string,
  fallback: undefined,
  opts?: { integer?: boolean; min?: number },
): number | undefined;
function readNumber(
  node: Node,
  key: string,
  fallback: number | undefined,
  opts: { integer?: boolean; min?: number } = {},
): number | undefined {
  const text = contextString(node, key);
  if (text === undefined) return fallback;
  const value = Number(text);
  const min = opts.min ?? 0;
  if (text.trim() === '' || !Number.isFinite(value) || value < min || (opts.integer && !Number.isInteger(value))) {
    const kind = opts.integer ? 'an integer' : 'a number';
    throw new Error(`context "${key}" must be ${kind} >= ${min}, got "${text}"`);
  }
  return value;
}

function readProviders(node: Node): ProviderId[] {
  const text = contextString(node, 'providers') ?? 'local';
  const ids = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const known = new Set<string>(PROVIDER_IDS);
  const unknown = ids.filter((id) => !known.has(id));
  if (ids.length === 0 || unknown.length > 0 || new Set(ids).size !== ids.length) {
    throw new Error(
      `context "providers" must be a non-empty list without repeats of ${PROVIDER_IDS.join(', ')}, got "${text}"`,
    );
  }
  return ids as ProviderId[];
}

function readBedrockModelId(node: Node): string | undefined {
  const id = contextString(node, 'bedrockModelId')?.trim();
  if (id === undefined || id === '') return undefined;
  if (!/^[a-z0-9][a-z0-9.:-]*$/.test(id)) {
    throw new Error(
      `context "bedrockModelId" must be a model id or a system-defined inference profile id (no ARN), got "${id}"`,
    );
  }
  const base = bedrockBaseModelId(id);
  if (!(base in bedrockPricingData.models)) {
    throw new Error(`context "bedrockModelId": base model "${base}" has no price in shared/infra/bedrock-pricing.json`);
  }
  return id;
}

/** A plain address check (the subscription itself is confirmed by mail): one @, no spaces, a dot in the domain. */
const EMAIL = /^[^\s@,;]+@[^\s@,;]+\.[^\s@,;]+$/;

function readAlarmEmail(node: Node): string | undefined {
  const email = contextString(node, 'alarmEmail')?.trim();
  if (email === undefined || email === '') return undefined;
  if (!EMAIL.test(email)) throw new Error(`context "alarmEmail" must be one e-mail address, got "${email}"`);
  return email;
}

/** Reads the settings from context; values given with `-c key=value` arrive as strings and are parsed here. */
export function readSettings(node: Node): AppSettings {
  const stage = contextString(node, 'stage') ?? 'dev';
  if (!/^[a-z][a-z0-9-]{0,19}$/.test(stage)) {
    throw new Error(`context "stage" must be lower-case letters, digits and dashes (max 20), got "${stage}"`);
  }
  if (node.tryGetContext('costConfirmationThresholdUsd') !== undefined) {
    throw new Error('context "costConfirmationThresholdUsd" was renamed to "confirmationThresholdUsd"');
  }
  const workerPackaging = contextString(node, 'workerPackaging') ?? 'image';
  if (workerPackaging !== 'image' && workerPackaging !== 'zip') {
    throw new Error(`context "workerPackaging" must be "image" or "zip", got "${workerPackaging}"`);
  }
  const providers = readProviders(node);
  const bedrockModelId = readBedrockModelId(node);
  if (bedrockModelId !== undefined && !providers.includes('bedrock')) {
    throw new Error('context "bedrockModelId" is set but "providers" does not include bedrock');
  }
  const imageMaxBytes = readNumber(node, 'imageMaxBytes', undefined, { integer: true, min: 1 });
  const pdfMaxBytes = readNumber(node, 'pdfMaxBytes', undefined, { integer: true, min: 1 });
  const pdfMaxPages = readNumber(node, 'pdfMaxPages', undefined, { integer: true, min: 1 });
  const alarmEmail = readAlarmEmail(node);
  const marginPct = readNumber(node, 'marginPct', undefined);
  if (marginPct !== undefined && marginPct > 1000)
    throw new Error(`context "marginPct" must be at most 1000, got ${marginPct}`);
  return {
    stage,
    providers,
    confirmationThresholdUsd: readNumber(node, 'confirmationThresholdUsd', 1),
    ...(marginPct === undefined ? {} : { marginPct }),
    limits: {
      ...(imageMaxBytes === undefined ? {} : { imageMaxBytes }),
      ...(pdfMaxBytes === undefined ? {} : { pdfMaxBytes }),
      ...(pdfMaxPages === undefined ? {} : { pdfMaxPages }),
    },
    runRetentionDays: readNumber(node, 'runRetentionDays', 90, { integer: true, min: 1 }),
    uploadRetentionHours: readNumber(node, 'uploadRetentionHours', 24, { integer: true, min: 1 }),
    ...(bedrockModelId === undefined ? {} : { bedrockModelId }),
    destroyOnRemoval: readBoolean(node, 'destroyOnRemoval', false),
    workerPackaging,
    apiGatewayCloudWatchRole: readBoolean(node, 'apiGatewayCloudWatchRole', true),
    stageThrottle: {
      // Below the per-key limits a single key could never reach its own rate.
      rateLimit: readNumber(node, 'stageThrottleRps', DEFAULT_STAGE_THROTTLE.rateLimit, {
        integer: true,
        min: PER_KEY_THROTTLE.rateLimit,
      }),
      burstLimit: readNumber(node, 'stageThrottleBurst', DEFAULT_STAGE_THROTTLE.burstLimit, {
        integer: true,
        min: PER_KEY_THROTTLE.burstLimit,
      }),
    },
    ...(alarmEmail === undefined ? {} : { alarmEmail }),
  };
}

/** The model the worker calls when bedrock is enabled: the setting, or the default for the stack's region. */
export function effectiveBedrockModelId(settings: AppSettings, region: string): string {
  if (settings.bedrockModelId) return settings.bedrockModelId;
  const us = !Token.isUnresolved(region) && /^us-(?:east|west)-\d+$/.test(region);
  return `${us ? 'us' : 'global'}.${bedrockPricingData.defaultModel}`;
}

/**
 * Days after which S3 deletes an upload: an upload is usable for `uploadRetentionHours`, and a run created at the
 * last moment may still be read by the worker until its message has used every receive (visibility timeout x max
 * receives). S3 lifecycle counts whole days (rounded up to the next midnight UTC), so this is a lower bound.
 */
export function uploadExpiryDays(uploadRetentionHours: number): number {
  const queueSeconds = runQueue.visibilityTimeoutSeconds * runQueue.maxReceiveCount;
  return Math.ceil((uploadRetentionHours * 3600 + queueSeconds) / 86_400);
}

/** Environment variables of shared/config.ts that the stacks set on every function. */
export function serviceEnvironment(settings: AppSettings): Record<string, string> {
  const { limits } = settings;
  return {
    [ENV.confirmationThresholdUsd]: String(settings.confirmationThresholdUsd),
    ...(settings.marginPct === undefined ? {} : { [ENV.marginPct]: String(settings.marginPct) }),
    [ENV.runRetentionDays]: String(settings.runRetentionDays),
    [ENV.uploadRetentionHours]: String(settings.uploadRetentionHours),
    ...(limits.imageMaxBytes === undefined ? {} : { [ENV.imageMaxBytes]: String(limits.imageMaxBytes) }),
    ...(limits.pdfMaxBytes === undefined ? {} : { [ENV.pdfMaxBytes]: String(limits.pdfMaxBytes) }),
    ...(limits.pdfMaxPages === undefined ? {} : { [ENV.pdfMaxPages]: String(limits.pdfMaxPages) }),
  };
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
    description: `Vision analysis service (${settings.stage}): tables, uploads bucket, queues, secrets, run event bus`,
    removalPolicy,
    uploadExpiryDays: uploadExpiryDays(settings.uploadRetentionHours),
    stage: settings.stage,
  });
  const stateless = new StatelessStack(app, `VisionStateless-${settings.stage}`, {
    ...stackEnv,
    description: `Vision analysis service (${settings.stage}): API, functions, worker, alarms`,
    resources: stateful,
    stageName: settings.stage,
    serviceEnvironment: serviceEnvironment(settings),
    providers: settings.providers,
    ...(settings.providers.includes('bedrock')
      ? { bedrockModelId: effectiveBedrockModelId(settings, stateful.region) }
      : {}),
    workerPackaging: settings.workerPackaging,
    logRemovalPolicy: removalPolicy,
    apiGatewayCloudWatchRole: settings.apiGatewayCloudWatchRole,
    stageThrottle: settings.stageThrottle,
    ...(settings.alarmEmail === undefined ? {} : { alarmEmail: settings.alarmEmail }),
  });
  stateless.addStackDependency(stateful);

  for (const stack of [stateful, stateless]) {
    Tags.of(stack).add('service', 'vision-analysis');
    Tags.of(stack).add('stage', settings.stage);
  }
  return { stateful, stateless };
}
