/**
 * planFor: the options creation, an evaluation's runs and the estimate route plan a run with. Without
 * VISION_PROVIDERS the providers are ordered by cost, unless the request names its provider; the margin is the
 * deployment's (PRICING_MARGIN_PCT), the one recorded on the run.
 */
process.env.PRICING_MARGIN_PCT = '35';
delete process.env.VISION_PROVIDERS;

import { seedFactors } from '../../shared/planning/estimate.js';
import { planRun } from '../../shared/planning/plan.js';
import { planFor } from '../../shared/planning/plan-for.js';
import type { TaskSpec } from '../../shared/task.js';

const facts = { kind: 'image', mime: 'image/png', sizeBytes: 200_000, pages: 1, width: 1200, height: 1600 } as const;
const task: TaskSpec = {
  prompt: 'Extract the total',
  outputFormat: 'json',
  fields: [{ name: 'total', type: 'number', required: true }],
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
};

describe('planFor', () => {
  test("carries the deployment's margin, the tenant's factors and the run's priority", () => {
    expect(planFor(seedFactors, 'batch')).toEqual({
      explicitOrder: false,
      marginPct: 35,
      factors: seedFactors,
      priority: 'batch',
    });
  });

  test('a provider the request names keeps its place; otherwise the cheapest worst case goes first', () => {
    const providers = ['openai', 'anthropic', 'gemini'] as const;
    const byCost = planRun(facts, task, providers, planFor(seedFactors, 'standard')).candidates;
    const reversed = [...byCost].reverse();
    expect(new Set(byCost).size).toBe(3);
    expect(planRun(facts, task, reversed, planFor(seedFactors, 'standard')).candidates).toEqual(byCost);
    expect(planRun(facts, task, reversed, planFor(seedFactors, 'standard', true)).candidates).toEqual(reversed);
  });
});
