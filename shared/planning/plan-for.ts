/**
 * The options this deployment plans a tenant's run with (./plan.ts `planRun`): run creation, an evaluation's runs and
 * the estimate route all take them from here, so the price a client is quoted is the one its run is held at.
 * Not to undo: the margin is read now and recorded on the run; the worker prices with it even if a deploy changes it.
 */
import { config } from '../config.js';
import type { FactorsFor } from '../pricing/calibration.js';
import { pricing } from '../pricing/pricing.js';
import type { Priority } from '../task.js';
import type { PlanOptions } from './plan.js';

/**
 * The configured order when VISION_PROVIDERS names one (or when the request names its provider: `named`), the margin,
 * the tenant's calibration `factors` (its own once it has enough runs of a key, else the deployment's) and the run's
 * priority (a batch run is planned at its providers' batch discount, with its batch calibration keys).
 */
export function planFor(factors: FactorsFor, priority: Priority, named = false): PlanOptions & { marginPct: number } {
  return { explicitOrder: named || config.providers !== undefined, marginPct: pricing.marginPct, factors, priority };
}
