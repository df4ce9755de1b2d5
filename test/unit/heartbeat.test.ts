/**
 * The heartbeat of a delivery's lease (shared/worker/heartbeat.ts) on a fake clock: it renews every third of the lease
 * and hides the message as long, stops for good when the lease is taken or lapses unrenewed, refuses provider calls
 * from then on, and writes nothing once stopped.
 */
import { jest } from '@jest/globals';
import type { ProviderAdapter, ProviderInput } from '../../shared/providers/types.js';
import { ProviderFailure } from '../../shared/task.js';
import { holderId, LeaseLost, startHeartbeat } from '../../shared/worker/heartbeat.js';

const LEASE_MS = 60_000;
const START = Date.parse('2026-11-26T09:00:00.000Z');

beforeEach(() => {
  jest.useFakeTimers({ now: START });
});
afterEach(() => {
  jest.useRealTimers();
});

/** A heartbeat whose renewals and hides are recorded; `renewals` answer in turn (true by default). */
function beating(options: { renewals?: Array<boolean | Error>; endMs?: number } = {}) {
  const renewed: number[] = [];
  const hidden: number[] = [];
  const answers = [...(options.renewals ?? [])];
  const heartbeat = startHeartbeat({
    leaseMs: LEASE_MS,
    until: START + LEASE_MS,
    endMs: options.endMs ?? START + 900_000,
    renew: async (until) => {
      renewed.push(until.getTime() - Date.now());
      const answer = answers.shift() ?? true;
      if (answer instanceof Error) throw answer;
      return answer;
    },
    hide: async (seconds) => {
      hidden.push(seconds);
    },
    subject: { jobId: 'run_1' },
  });
  return { heartbeat, renewed, hidden };
}

test('hides the message for the lease at once, then renews the lease and hides it again every third of the lease', async () => {
  const { heartbeat, renewed, hidden } = beating();
  await jest.advanceTimersByTimeAsync(0);
  expect(hidden).toEqual([60]);
  expect(renewed).toEqual([]);
  await jest.advanceTimersByTimeAsync(20_000);
  expect(renewed).toEqual([LEASE_MS]);
  expect(hidden).toEqual([60, 60]);
  await jest.advanceTimersByTimeAsync(40_000);
  expect(renewed).toEqual([LEASE_MS, LEASE_MS, LEASE_MS]);
  // Renewed in time, the lease never lapses however long the work.
  await jest.advanceTimersByTimeAsync(600_000);
  expect(heartbeat.lost).toBe(false);
  expect(() => heartbeat.check()).not.toThrow();
  await heartbeat.stop();
});

test('a renewal refused (another delivery took the lease) loses it for good: no more beats, checks throw', async () => {
  const { heartbeat, renewed, hidden } = beating({ renewals: [true, false] });
  await jest.advanceTimersByTimeAsync(40_000);
  expect(renewed).toHaveLength(2);
  expect(heartbeat.lost).toBe(true);
  expect(() => heartbeat.check()).toThrow(LeaseLost);
  // The message is not hidden for a lease that is no longer this delivery's, and nothing more is tried.
  expect(hidden).toEqual([60, 60]);
  await jest.advanceTimersByTimeAsync(120_000);
  expect(renewed).toHaveLength(2);
  await heartbeat.stop();
});

test('renewals that fail (the table unreachable) keep trying; the lease is lost once it lapses unrenewed', async () => {
  const unreachable = new Error('ECONNREFUSED');
  const { heartbeat, renewed } = beating({ renewals: [unreachable, unreachable, unreachable, unreachable] });
  await jest.advanceTimersByTimeAsync(59_999);
  expect(renewed).toHaveLength(2);
  expect(heartbeat.lost).toBe(false);
  await jest.advanceTimersByTimeAsync(1);
  // The claim's lease ended at START + 60 s and no renewal landed: another delivery may hold the run now.
  expect(heartbeat.lost).toBe(true);
  await heartbeat.stop();
});

test('a renewal that fails once and then succeeds keeps the lease', async () => {
  const { heartbeat } = beating({ renewals: [new Error('throttled'), true] });
  await jest.advanceTimersByTimeAsync(100_000);
  expect(heartbeat.lost).toBe(false);
  await heartbeat.stop();
});

test('never renews past the end of the invocation: the lease ends with it', async () => {
  const { heartbeat, renewed } = beating({ endMs: START + 70_000 });
  await jest.advanceTimersByTimeAsync(20_000);
  expect(renewed).toEqual([50_000]);
  await jest.advanceTimersByTimeAsync(50_000);
  expect(heartbeat.lost).toBe(true);
  await heartbeat.stop();
});

test('stop waits for a renewal in flight, and nothing is renewed or hidden after it', async () => {
  let finish: (ok: boolean) => void = () => {};
  const renewed: number[] = [];
  const hidden: number[] = [];
  const heartbeat = startHeartbeat({
    leaseMs: LEASE_MS,
    until: START + LEASE_MS,
    endMs: START + 900_000,
    renew: (until) => {
      renewed.push(until.getTime());
      return new Promise((resolve) => {
        finish = resolve;
      });
    },
    hide: async (seconds) => {
      hidden.push(seconds);
    },
    subject: { jobId: 'run_1' },
  });
  await jest.advanceTimersByTimeAsync(20_000);
  expect(renewed).toHaveLength(1);
  let stopped = false;
  const stopping = heartbeat.stop().then(() => {
    stopped = true;
  });
  await jest.advanceTimersByTimeAsync(0);
  expect(stopped).toBe(false);
  finish(true);
  await stopping;
  const hides = hidden.length;
  await jest.advanceTimersByTimeAsync(300_000);
  expect(renewed).toHaveLength(1);
  expect(hidden).toHaveLength(hides);
});

test('guarded adapters ask the provider while the lease holds, and refuse (a failed attempt) once it is lost', async () => {
  const { heartbeat } = beating({ renewals: [false] });
  const asked: number[] = [];
  const local: ProviderAdapter = {
    id: 'local',
    invoke: async (input: ProviderInput) => {
      asked.push(input.pages?.first ?? 0);
      return { result: { text: 'ok' }, usage: { billableUnits: 1, costMicros: 1 } };
    },
  };
  const guarded = heartbeat.guard({ local });
  const input = { pages: { first: 1, last: 1 } } as ProviderInput;
  await guarded.local?.invoke(input, { signal: new AbortController().signal, deadlineMs: START + 60_000 });
  await jest.advanceTimersByTimeAsync(20_000);
  expect(heartbeat.lost).toBe(true);
  const refused = guarded.local?.invoke(
    { ...input, pages: { first: 2, last: 2 } },
    { signal: new AbortController().signal, deadlineMs: START + 60_000 },
  );
  await expect(refused).rejects.toThrow(ProviderFailure);
  expect(asked).toEqual([1]);
  await heartbeat.stop();
});

test('a holder id names where the delivery runs (the Lambda log stream when there is one) and is unique', () => {
  expect(holderId()).toMatch(/^pid \d+ on .+ #[0-9a-f]{8}$/);
  expect(holderId()).not.toBe(holderId());
  process.env.AWS_LAMBDA_LOG_STREAM_NAME = '2026/11/26/[$LATEST]0123abcd';
  try {
    expect(holderId()).toMatch(/^log stream 2026\/11\/26\/\[\$LATEST\]0123abcd #[0-9a-f]{8}$/);
  } finally {
    delete process.env.AWS_LAMBDA_LOG_STREAM_NAME;
  }
});
