/**
 * Starts the integration suite's local stacks, one per jest worker, and publishes their coordinates through the
 * environment (INTEGRATION_STACKS; the workers are forked after this and inherit it). `stack()` in client.ts gives a
 * test file its worker's stack.
 * Not to undo: a stack per worker, not one shared by all. The files share each stack's tenants (tenant-a, tenant-b),
 * its queue, worker and counters, and assert on them (a drained queue, a balanced tenant ledger); files run one after
 * another on their worker's stack, exactly as in band, so those assertions keep holding on 2 workers.
 * Settings chosen for testability, each a documented configuration value: two tenants with dev keys, a confirmation
 * threshold low enough that a multi-page PDF needs confirmation, a short visibility timeout and lease so redelivery
 * is observable, the crash-simulation seam switched on, a reconciler that sweeps every 5 s with short waits, and a
 * webhook retry schedule of seconds.
 */
// Jest loads globalSetup through require() without the moduleNameMapper, so this import names the .ts file itself.
import { type RunningStack, startStack } from './stack.ts';

export const TEST_KEYS = { a: 'vk_test_tenant_a_0123456789abcdef', b: 'vk_test_tenant_b_0123456789abcdef' };

const SUITE_ENV: Record<string, string> = {
  VISION_DEV_API_KEYS: `tenant-a:${TEST_KEYS.a},tenant-b:${TEST_KEYS.b}`,
  SERVICE_COST_CONFIRMATION_THRESHOLD_USD: '0.001',
  LOCAL_VISIBILITY_TIMEOUT_SECONDS: '3',
  // A worker's lease lapses 10 s after its last renewal (deployed: 60 s), so a run whose every delivery dies is
  // found dead within the tests' waits.
  SERVICE_LEASE_SECONDS: '10',
  VISION_LOCAL_FAULT_INJECTION: 'true',
  // The reconciler sweeps every 5 s; it resends a never-delivered run after 4 s, and fails a run delivered
  // maxReceiveCount times 10 s after its last sign of life (its last delivery's start or the end of its last lease).
  // A slow run is never taken for a dead one however often SQS redelivers it: its heartbeat keeps its lease in the
  // future, and a run with a live lease waits (shared/worker/reconcile.ts `decide`). A sweep is ~10 queries (~0.1
  // CPU-second): every second, the sweeps of three suite stacks took a sixth of the machine for the whole run; every
  // 5 s, the few tests that wait on a sweep wait up to 4 s longer (docs/decisions.md, "The test suite's phases").
  LOCAL_RECONCILE_INTERVAL_SECONDS: '5',
  LOCAL_RECONCILE_RESEND_AFTER_SECONDS: '4',
  LOCAL_RECONCILE_DEAD_AFTER_SECONDS: '10',
  VISION_PROVIDERS: 'local',
  LOCAL_RATE_LIMIT_RPS: '1000',
  LOCAL_RATE_LIMIT_BURST: '1000',
  // Webhooks: four tries a second apart (deployed: ten over about a day), and an event whose dispatch a crash
  // interrupted is handed on by the sweep after 2 s.
  WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1',
  LOCAL_EVENTS_SWEEP_AFTER_SECONDS: '2',
  // An evaluation a crash left open is finished by the sweep 3 s after its creation (deployed: 2 minutes).
  LOCAL_EVALUATIONS_SWEEP_AFTER_SECONDS: '3',
  // OCR for evidence on a machine the suite loads (test/setup-env.ts, which stacks started by a test inherit).
  SERVICE_EVIDENCE_OCR_BUDGET_MS: '60000',
};

export default async function globalSetup(globalConfig: { maxWorkers: number }): Promise<void> {
  // --runInBand makes maxWorkers 1: one stack, as before. Jest numbers its workers 1..maxWorkers (JEST_WORKER_ID).
  const count = Math.max(1, globalConfig.maxWorkers);
  const started = await Promise.allSettled(Array.from({ length: count }, () => startStack(SUITE_ENV)));
  const stacks = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  (globalThis as { __visionStacks?: RunningStack[] }).__visionStacks = stacks;
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    await Promise.all(stacks.map((s) => s.stop()));
    throw failed.reason;
  }
  process.env.INTEGRATION_STACKS = JSON.stringify(stacks.map((s) => s.info));
}
