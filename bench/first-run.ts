/**
 * Estimate ÷ price of the FIRST run of each fixture on a fresh deployment (issue #26, point 2): an empty calibration
 * table, one provider at a time (VISION_PROVIDERS), the run created by the create-run core and processed by the
 * worker's core as the service does, every cloud provider answered by the fakes that bill by its published counting
 * rules (bench/provider-fakes.ts). One child process per provider (bench/first-run-child.ts: the service reads its
 * configuration once per process), all on one set of emulators, each with its own tables.
 * The warm figures (after 40 runs, calibration learning) are bench/estimates.ts.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../lib/vision-function.js';
import { startEmulators } from '../scripts/local/emulators.js';
import { ESTIMATE_PROVIDERS } from './estimate-fixtures.js';
import type { FirstRunRow } from './first-run-child.js';

const run = promisify(execFile);

export interface FirstRunResult {
  rows: FirstRunRow[];
  /** Providers whose child process failed, with its error. */
  failures: Record<string, string>;
}

export async function measureFirstRuns(options: { log: (line: string) => void }): Promise<FirstRunResult> {
  // The emulators' readiness check needs a region and credentials (any: they are local).
  const saved = { ...process.env };
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  const emulators = await startEmulators().finally(() => {
    process.env = saved;
  });
  const rows: FirstRunRow[] = [];
  const failures: Record<string, string> = {};
  try {
    for (const provider of ESTIMATE_PROVIDERS) {
      try {
        const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join('bench', 'first-run-child.ts')], {
          cwd: PROJECT_ROOT,
          maxBuffer: 16 * 1024 * 1024,
          timeout: 600_000,
          env: {
            ...process.env,
            VISION_PROVIDERS: provider,
            AWS_ENDPOINT_URL_DYNAMODB: emulators.endpoints.dynamodb,
            AWS_ENDPOINT_URL_S3: emulators.endpoints.s3,
            AWS_ENDPOINT_URL_SQS: emulators.endpoints.sqs,
            S3_FORCE_PATH_STYLE: 'true',
            AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
            AWS_ACCESS_KEY_ID: 'local',
            AWS_SECRET_ACCESS_KEY: 'local',
            LOG_LEVEL: 'error',
            AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
          },
        });
        const line = stdout.trim().split('\n').at(-1) ?? '[]';
        const mine = JSON.parse(line) as FirstRunRow[];
        for (const row of mine) {
          options.log(
            `  ${row.provider} ${row.file} (${row.label}: "${row.prompt}"): ${row.status}, estimate ÷ price ${row.ratio}` +
              ` (${row.estimateMicros} / ${row.priceMicros} µ$; ${row.attempts.join(', ')})`,
          );
        }
        rows.push(...mine);
      } catch (error: unknown) {
        failures[provider] = (error instanceof Error ? error.message : String(error)).slice(0, 2000);
        options.log(`  ${provider}: FAILED ${failures[provider]?.slice(0, 500)}`);
      }
    }
  } finally {
    await emulators.stop();
  }
  return { rows, failures };
}
