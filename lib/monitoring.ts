/**
 * Alarms, their notification topic (output `AlarmTopicArn`; context `alarmEmail` subscribes an address) and a dashboard.
 * Not to undo: the topic is encrypted with its own customer-managed KMS key, because CloudWatch alarms cannot publish to
 * one encrypted with `alias/aws/sns`. Custom metrics come from shared/infra/metrics.ts.
 * More: docs/decisions.md#the-alarm-topic-and-its-key.
 */
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { METRIC_DIMENSIONS, METRIC_NAMES, METRICS_NAMESPACE } from '../shared/infra/metrics.js';
import { reconcileSettings } from '../shared/infra/resources.js';

const FIVE_MINUTES = Duration.minutes(5);

/** Alarm thresholds (infra tests read these). Every alarm: 5-minute periods, missing data is not breaching. */
export const ALARM_THRESHOLDS = {
  /** Any message in the dead-letter queue is a run that failed every delivery. Maximum > 0, 1 of 1 periods. */
  deadLetterMessages: 0,
  /** Any worker invocation error (a thrown handler, timeout or OOM; per-record failures are not errors). Sum > 0. */
  workerErrors: 0,
  /**
   * Any reconciler invocation error: a sweep that could not handle some queued run (it handles the others first, then
   * fails), so a run may stay held until a later sweep succeeds. Sum > 0.
   */
  reconcileErrors: 0,
  /** API 5XX responses (from handlers or API Gateway). Sum > 5 in 5 minutes, 1 of 1 periods. */
  api5xx: 5,
  /** API p99 latency in ms; handlers answer well within 29 s, create-run has 20 s. p99 > 5 s for 3 of 3 periods. */
  apiLatencyP99Ms: 5000,
  /** Failed provider attempts (all providers) per 5 minutes; > 10 means a provider is down or misconfigured. */
  providerAttemptFailed: 10,
  /** Fallbacks to the next candidate per 5 minutes. */
  providerFallback: 10,
  /**
   * Age in seconds of the oldest message in the run queue (Maximum): a backlog. Runs waiting this long are what the
   * reconciler takes for lost and sends again (reconcileSettings.resendAfterSeconds), so the operator hears of it
   * when that starts: the workers are too few (maxConcurrency), throttled or failing.
   */
  runQueueOldestMessageSeconds: reconcileSettings.resendAfterSeconds,
  /** Any webhook delivery in its dead-letter queue: a receiver refused every try for a day. Maximum > 0. */
  webhookDeadLetterMessages: 0,
  /** Any deliver function error (a thrown batch, timeout or OOM; receivers' failures are not errors). Sum > 0. */
  deliverErrors: 0,
  /** Any run event the pipe could not put on the event bus. Maximum > 0. */
  eventBusFeedDeadLetterMessages: 0,
} as const;

export interface MonitoringProps {
  readonly stage: string;
  readonly api: apigw.RestApi;
  readonly worker: lambda.IFunction;
  readonly reconciler: lambda.IFunction;
  readonly deadLetterQueue: sqs.IQueue;
  readonly runQueue: sqs.IQueue;
  readonly deliverer: lambda.IFunction;
  readonly webhookDeadLetterQueue: sqs.IQueue;
  readonly eventBusFeedDeadLetterQueue: sqs.IQueue;
  readonly functions: readonly lambda.IFunction[];
  /** Subscribes this address to the alarm topic (CDK context `alarmEmail`). @default no subscription */
  readonly alarmEmail?: string;
}

export class Monitoring extends Construct {
  readonly alarms: Record<keyof typeof ALARM_THRESHOLDS, cloudwatch.Alarm>;
  readonly dashboard: cloudwatch.Dashboard;
  /** Every alarm's ALARM and OK action. */
  readonly alarmTopic: sns.Topic;
  readonly alarmTopicKey: kms.Key;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const { account, region, partition } = Stack.of(this);
    const alarmName = (key: string) => `vision-${props.stage}-${key}`;
    this.alarmTopicKey = new kms.Key(this, 'AlarmTopicKey', {
      description: `Encrypts the vision-${props.stage} alarm topic`,
      enableKeyRotation: true,
      // It protects notifications in transit only (nothing stored stays encrypted with it), so it goes with the stack
      // (KMS deletes it after its 30-day waiting period) instead of lingering at 1 USD/month after a destroy.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // CloudWatch encrypts the notification with the topic's key when it publishes: it needs a data key from it.
    // Both grants are limited to this stage's alarms (names `vision-<stage>-…`, below) in this account and region.
    const thisStagesAlarms = {
      StringEquals: { 'aws:SourceAccount': account },
      ArnLike: { 'aws:SourceArn': `arn:${partition}:cloudwatch:${region}:${account}:alarm:${alarmName('*')}` },
    };
    this.alarmTopicKey.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'AllowCloudWatchAlarmsToUseTheKey',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: thisStagesAlarms,
      }),
    );
    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', {
      topicName: `vision-${props.stage}-alarms`,
      displayName: `Vision service (${props.stage}) alarms`,
      masterKey: this.alarmTopicKey,
      enforceSSL: true,
    });
    // A topic policy replaces SNS's default one (enforceSSL creates it), so the alarms' publish right is explicit.
    this.alarmTopic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'AllowCloudWatchAlarmsToPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [this.alarmTopic.topicArn],
        conditions: thisStagesAlarms,
      }),
    );
    if (props.alarmEmail) this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    const notify = new cloudwatchActions.SnsAction(this.alarmTopic);

    const stage = props.api.deploymentStage;
    const custom = (metricName: string, statistic: string) =>
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        dimensionsMap: { [METRIC_DIMENSIONS.stage]: props.stage },
        statistic,
        period: FIVE_MINUTES,
      });

    const metrics = {
      deadLetterMessages: props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        statistic: cloudwatch.Stats.MAXIMUM,
        period: FIVE_MINUTES,
      }),
      workerErrors: props.worker.metricErrors({ statistic: cloudwatch.Stats.SUM, period: FIVE_MINUTES }),
      reconcileErrors: props.reconciler.metricErrors({ statistic: cloudwatch.Stats.SUM, period: FIVE_MINUTES }),
      api5xx: stage.metricServerError({ statistic: cloudwatch.Stats.SUM, period: FIVE_MINUTES }),
      apiLatencyP99Ms: stage.metricLatency({ statistic: cloudwatch.Stats.p(99), period: FIVE_MINUTES }),
      providerAttemptFailed: custom(METRIC_NAMES.providerAttemptFailed, cloudwatch.Stats.SUM),
      providerFallback: custom(METRIC_NAMES.providerFallback, cloudwatch.Stats.SUM),
      runQueueOldestMessageSeconds: props.runQueue.metricApproximateAgeOfOldestMessage({
        statistic: cloudwatch.Stats.MAXIMUM,
        period: FIVE_MINUTES,
      }),
      webhookDeadLetterMessages: props.webhookDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
        statistic: cloudwatch.Stats.MAXIMUM,
        period: FIVE_MINUTES,
      }),
      deliverErrors: props.deliverer.metricErrors({ statistic: cloudwatch.Stats.SUM, period: FIVE_MINUTES }),
      eventBusFeedDeadLetterMessages: props.eventBusFeedDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
        statistic: cloudwatch.Stats.MAXIMUM,
        period: FIVE_MINUTES,
      }),
    };
    const descriptions: Record<keyof typeof ALARM_THRESHOLDS, string> = {
      deadLetterMessages: 'Runs in the dead-letter queue: every delivery failed. Inspect and redrive or settle them.',
      workerErrors: 'The worker threw, timed out or ran out of memory.',
      reconcileErrors: 'The reconciler could not handle some queued runs (held money may wait for a later sweep).',
      api5xx: 'The API answers 5XX.',
      apiLatencyP99Ms: 'API p99 latency is high.',
      providerAttemptFailed: 'Provider attempts are failing (see the per-provider widget of the dashboard).',
      providerFallback: 'Runs are falling back from their first provider.',
      runQueueOldestMessageSeconds:
        'Runs wait in the queue longer than the reconciler allows before resending them: workers too few, throttled or failing.',
      webhookDeadLetterMessages:
        'Webhook deliveries whose every try failed (the endpoint shows them `failed` in GET /v1/webhooks/{id}/deliveries). Tell the tenant; redrive once their receiver is back.',
      deliverErrors:
        'The webhook deliver function threw, timed out or ran out of memory (tables or queues unreachable?).',
      eventBusFeedDeadLetterMessages:
        'Run events the pipe could not put on the event bus (see the pipe and its role). Redrive them to the feed queue.',
    };
    const evaluation: Partial<Record<keyof typeof ALARM_THRESHOLDS, number>> = { apiLatencyP99Ms: 3 };

    const alarms: Partial<Record<keyof typeof ALARM_THRESHOLDS, cloudwatch.Alarm>> = {};
    for (const key of Object.keys(ALARM_THRESHOLDS) as (keyof typeof ALARM_THRESHOLDS)[]) {
      const periods = evaluation[key] ?? 1;
      alarms[key] = new cloudwatch.Alarm(this, `${key.charAt(0).toUpperCase()}${key.slice(1)}Alarm`, {
        alarmName: alarmName(key),
        alarmDescription: descriptions[key],
        metric: metrics[key],
        threshold: ALARM_THRESHOLDS[key],
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: periods,
        datapointsToAlarm: periods,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      alarms[key].addAlarmAction(notify);
      alarms[key].addOkAction(notify);
    }
    this.alarms = alarms as Record<keyof typeof ALARM_THRESHOLDS, cloudwatch.Alarm>;

    const perProvider = (metricName: string, label: string) =>
      new cloudwatch.MathExpression({
        expression: `SEARCH('{${METRICS_NAMESPACE},${METRIC_DIMENSIONS.stage},${METRIC_DIMENSIONS.provider}} MetricName="${metricName}" ${METRIC_DIMENSIONS.stage}="${props.stage}"', 'Sum', 300)`,
        label,
        period: FIVE_MINUTES,
      });

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      // Dashboards are global to the account: the region keeps one stage deployed in two regions from colliding.
      dashboardName: `vision-${props.stage}-${Stack.of(this).region}`,
    });
    this.dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: Object.values(this.alarms), width: 24, height: 3 }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'API requests and errors',
        left: [
          stage.metricCount({ statistic: cloudwatch.Stats.SUM, period: FIVE_MINUTES }),
          stage.metricClientError({ statistic: cloudwatch.Stats.SUM, period: FIVE_MINUTES }),
          metrics.api5xx,
        ],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'API latency (ms)',
        left: [
          stage.metricLatency({ statistic: cloudwatch.Stats.p(50), period: FIVE_MINUTES }),
          metrics.apiLatencyP99Ms,
        ],
        leftAnnotations: [{ value: ALARM_THRESHOLDS.apiLatencyP99Ms, label: 'p99 alarm' }],
        width: 12,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Provider attempts failed (by provider)',
        left: [perProvider(METRIC_NAMES.providerAttemptFailed, 'failed')],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Provider fallbacks (by provider)',
        left: [perProvider(METRIC_NAMES.providerFallback, 'fallback')],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Run latency (ms) and failed runs',
        left: [
          custom(METRIC_NAMES.runLatencyMs, cloudwatch.Stats.p(50)),
          custom(METRIC_NAMES.runLatencyMs, cloudwatch.Stats.p(99)),
        ],
        right: [custom(METRIC_NAMES.runFailed, cloudwatch.Stats.SUM)],
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Absorbed overruns (micro-dollars: prices over estimates, the service pays)',
        left: [custom(METRIC_NAMES.absorbedMicros, cloudwatch.Stats.SUM)],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: "Pages OCR'd locally for evidence (scans only a language model read)",
        left: [custom(METRIC_NAMES.evidenceOcrPages, cloudwatch.Stats.SUM)],
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Worker',
        left: [
          props.worker.metricInvocations({ statistic: cloudwatch.Stats.SUM, period: FIVE_MINUTES }),
          metrics.workerErrors,
          props.worker.metricThrottles({ statistic: cloudwatch.Stats.SUM, period: FIVE_MINUTES }),
        ],
        right: [props.worker.metricDuration({ statistic: cloudwatch.Stats.p(99), period: FIVE_MINUTES })],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Dead-letter queues',
        left: [metrics.deadLetterMessages, metrics.webhookDeadLetterMessages, metrics.eventBusFeedDeadLetterMessages],
        width: 12,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Function errors',
        left: props.functions.map((fn) => fn.metricErrors({ statistic: cloudwatch.Stats.SUM, period: FIVE_MINUTES })),
        width: 24,
      }),
    );
  }
}
