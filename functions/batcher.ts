/**
 * Scheduled batcher (EventBridge, every batchSettings.everyMinutes): one pass of the batch lane
 * (shared/batching/batcher.ts): polls the provider batches in flight, submits the waiting requests, and sends the runs
 * whose requests were resolved back to the worker.
 */

import { enqueueRun } from '../shared/aws/run-message.js';
import { batchApis } from '../shared/batching/apis.js';
import { runBatcher } from '../shared/batching/batcher.js';
import { checkEnvironment } from '../shared/resource-name.js';

checkEnvironment();

export const handler = () => runBatcher({ apis: batchApis(), enqueue: enqueueRun });
