/**
 * The service's own modules the local stack runs beside the API's handlers: the worker's provider adapters (every
 * provider's SDK), the stores, the reconciler and the batcher. scripts/local.ts imports this module only once it has
 * started the emulators, so that its loading (about 2.5 s of a start on two cores, the provider SDKs above all) runs
 * while DynamoDB Local's JVM starts instead of before it.
 */
export { enqueueRun, hideMessage, jobIdOf } from '../../shared/aws/run-message.js';
export { batchApis } from '../../shared/batching/apis.js';
export { runBatcher } from '../../shared/batching/batcher.js';
export { adapters } from '../../shared/providers/adapters.js';
export { shutdownLocalProvider } from '../../shared/providers/local/local-provider.js';
export { claimRun, getRun } from '../../shared/store/runs.js';
export { createApiKey, ensureTenant, findActiveKey } from '../../shared/store/tenants.js';
export { holderId } from '../../shared/worker/heartbeat.js';
export { DEFAULT_RECONCILE_OPTIONS, reconcileRuns } from '../../shared/worker/reconcile.js';
