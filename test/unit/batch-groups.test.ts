/**
 * The batcher's grouping (shared/batching/groups.ts) against a fake clock: groups per provider and model, sent when
 * full or aged, Bedrock's minimum respected until a run's deadline comes close, nothing sent twice.
 */
import {
  configuredLimits,
  decideBatches,
  type GroupLimits,
  type LimitsFor,
  serviceLimits,
  type WaitingRequest,
} from '../../shared/batching/groups.js';
import type { ProviderId } from '../../shared/task.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** A clock the test moves by hand. */
function fakeClock(startMs = Date.UTC(2026, 10, 28, 9)) {
  let now = startMs;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

const LIMITS: GroupLimits = {
  minRequests: 1,
  maxRequests: 3,
  maxBytes: 1000,
  maxWaitMs: 10 * MINUTE,
  directMarginMs: HOUR,
};
const limits =
  (overrides: Partial<Record<ProviderId, Partial<GroupLimits> | null>> = {}): LimitsFor =>
  (provider) => {
    const own = overrides[provider];
    return own === null ? undefined : { ...LIMITS, ...own };
  };

let counter = 0;
function request(clock: { now: () => number }, fields: Partial<WaitingRequest> = {}): WaitingRequest {
  counter += 1;
  return {
    id: `run_${counter}#1`,
    provider: 'openai',
    model: 'gpt-5.4-mini',
    bytes: 100,
    waitingSinceMs: clock.now(),
    deadlineMs: clock.now() + 24 * HOUR,
    ...fields,
  };
}

const ids = (requests: readonly WaitingRequest[]) => requests.map((r) => r.id);

test('a group under its limits waits until its oldest request has waited maxWait, then goes out whole', () => {
  const clock = fakeClock();
  const first = request(clock);
  clock.advance(4 * MINUTE);
  const second = request(clock);

  const early = decideBatches([first, second], limits(), clock.now());
  expect(early.submit).toEqual([]);
  expect(early.direct).toEqual([]);
  expect(early.nextDecisionAtMs).toBe(first.waitingSinceMs + 10 * MINUTE);

  clock.advance(6 * MINUTE);
  const due = decideBatches([second, first], limits(), clock.now());
  expect(due.submit).toEqual([
    { provider: 'openai', model: 'gpt-5.4-mini', requests: [first, second], reason: 'aged' },
  ]);
  expect(due.nextDecisionAtMs).toBeNull();
});

test('a full group goes out at once; the remainder waits for its own age limit', () => {
  const clock = fakeClock();
  const requests = Array.from({ length: 4 }, () => {
    clock.advance(1000);
    return request(clock);
  });
  const decision = decideBatches(requests, limits(), clock.now());
  expect(decision.submit).toHaveLength(1);
  expect(decision.submit[0]?.reason).toBe('full');
  expect(ids(decision.submit[0]?.requests ?? [])).toEqual(ids(requests.slice(0, 3)));
  expect(decision.nextDecisionAtMs).toBe((requests[3] as WaitingRequest).waitingSinceMs + 10 * MINUTE);
});

test('the byte limit closes a batch too, and a request larger than a batch is called normally', () => {
  const clock = fakeClock();
  const big = request(clock, { bytes: 600 });
  const big2 = request(clock, { bytes: 600 });
  const huge = request(clock, { bytes: 5000 });
  const decision = decideBatches([big, big2, huge], limits(), clock.now());
  expect(decision.submit.map((b) => ids(b.requests))).toEqual([[big.id]]);
  expect(decision.direct).toEqual([{ request: huge, reason: 'too-large' }]);
});

test('groups are kept per provider and per model', () => {
  const clock = fakeClock();
  const mini = request(clock);
  const nano = request(clock, { model: 'gpt-5.4-nano' });
  const claude = request(clock, { provider: 'anthropic', model: 'claude-haiku-5-5' });
  clock.advance(10 * MINUTE);
  const decision = decideBatches([mini, nano, claude], limits(), clock.now());
  expect(decision.submit.map((b) => [b.provider, b.model, ids(b.requests)])).toEqual([
    ['openai', 'gpt-5.4-mini', [mini.id]],
    ['openai', 'gpt-5.4-nano', [nano.id]],
    ['anthropic', 'claude-haiku-5-5', [claude.id]],
  ]);
});

test('a request seen twice (a redelivered message) is in one batch once', () => {
  const clock = fakeClock();
  const a = request(clock);
  const b = request(clock);
  clock.advance(10 * MINUTE);
  const decision = decideBatches([a, b, { ...a }, b], limits(), clock.now());
  const sent = decision.submit.flatMap((batch) => ids(batch.requests));
  expect(sent).toEqual([a.id, b.id]);
});

test('a provider without a batch interface is called in this window at the normal price', () => {
  const clock = fakeClock();
  const textract = request(clock, { provider: 'textract', model: 'textract' });
  const decision = decideBatches([textract], limits({ textract: null }), clock.now());
  expect(decision).toEqual({
    submit: [],
    direct: [{ request: textract, reason: 'no-interface' }],
    nextDecisionAtMs: null,
  });
});

describe("a provider's minimum (Bedrock: 100 records a job)", () => {
  const bedrock = limits({ bedrock: { minRequests: 3, maxRequests: 10 } });
  const onBedrock = (clock: { now: () => number }, fields: Partial<WaitingRequest> = {}) =>
    request(clock, { provider: 'bedrock', model: 'amazon.nova-lite-v1:0', ...fields });

  test('a group under it waits past its age limit for company, and goes out once it reaches it', () => {
    const clock = fakeClock();
    const first = [onBedrock(clock), onBedrock(clock)];
    clock.advance(30 * MINUTE);
    const waiting = decideBatches(first, bedrock, clock.now());
    expect(waiting.submit).toEqual([]);
    expect(waiting.direct).toEqual([]);
    // It looks again when the first deadline comes within the margin.
    expect(waiting.nextDecisionAtMs).toBe((first[0] as WaitingRequest).deadlineMs - HOUR);

    const third = onBedrock(clock);
    const sent = decideBatches([...first, third], bedrock, clock.now());
    expect(sent.submit.map((b) => [b.reason, ids(b.requests)])).toEqual([['aged', ids([...first, third])]]);
  });

  test('a late request in a batch going out stays in it when the batch needs it to reach the minimum', () => {
    const clock = fakeClock();
    const late = onBedrock(clock, { deadlineMs: clock.now() + 70 * MINUTE });
    const others = [onBedrock(clock), onBedrock(clock)];
    clock.advance(10 * MINUTE);
    const decision = decideBatches([late, ...others], bedrock, clock.now());
    expect(decision.direct).toEqual([]);
    expect(decision.submit.map((b) => ids(b.requests))).toEqual([ids([late, ...others])]);
  });

  test('once a deadline is within the margin, its request is called normally so the run finishes in time', () => {
    const clock = fakeClock();
    const early = onBedrock(clock);
    clock.advance(2 * HOUR);
    const late = onBedrock(clock);
    clock.advance(21 * HOUR + 1);
    const decision = decideBatches([early, late], bedrock, clock.now());
    expect(decision.direct).toEqual([{ request: early, reason: 'deadline' }]);
    expect(decision.submit).toEqual([]);
    expect(decision.nextDecisionAtMs).toBe(late.deadlineMs - HOUR);
  });
});

test('a late request is called normally, not put in a batch the next pass would expire it from', () => {
  const clock = fakeClock();
  const onTime = request(clock);
  const late = request(clock, { deadlineMs: clock.now() + 30 * MINUTE });
  clock.advance(10 * MINUTE);
  const decision = decideBatches([onTime, late], limits(), clock.now());
  expect(decision.direct).toEqual([{ request: late, reason: 'deadline' }]);
  expect(decision.submit).toEqual([{ provider: 'openai', model: 'gpt-5.4-mini', requests: [onTime], reason: 'aged' }]);
  // Alone and late, it is called normally too.
  expect(decideBatches([late], limits(), clock.now())).toMatchObject({ submit: [], direct: [{ request: late }] });
});

test("configured limits cap each provider's own, never below its minimum", () => {
  const limitsFor = configuredLimits({ maxRequests: 50, maxWaitMs: 5 * MINUTE, directMarginMs: HOUR });
  expect(limitsFor('openai', 'gpt-5.4-mini')).toMatchObject({ minRequests: 1, maxRequests: 50, maxWaitMs: 5 * MINUTE });
  expect(limitsFor('bedrock', 'amazon.nova-lite-v1:0')).toMatchObject({ minRequests: 100, maxRequests: 100 });
  expect(limitsFor('gemini', 'gemini-3.8-flash')?.maxBytes).toBe(200 * 1024 * 1024);
  expect(limitsFor('textract', 'textract')).toBeUndefined();
  expect(limitsFor('local', 'local')).toBeUndefined();
});

test('the deployment reads its limits from the configuration (defaults: 2,000 requests, 10 minutes, an hour)', () => {
  expect(serviceLimits()('anthropic', 'claude-haiku-5-5')).toEqual({
    minRequests: 1,
    maxRequests: 2000,
    maxBytes: 256 * 1024 * 1024,
    maxWaitMs: 10 * MINUTE,
    directMarginMs: HOUR,
  });
});
