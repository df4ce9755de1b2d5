/** The worker's concurrency primitives (shared/worker/pool.ts): FIFO slots, and a provider pool a 429 slows down. */
import { ProviderFailure } from '../../shared/task.js';
import { ProviderPool, Semaphore } from '../../shared/worker/pool.js';

test('a semaphore lets `limit` holders in at once, the others in call order', async () => {
  const slots = new Semaphore(2);
  const order: number[] = [];
  const releases = await Promise.all([slots.acquire(), slots.acquire()]);
  const third = slots.acquire().then((release) => {
    order.push(3);
    return release;
  });
  const fourth = slots.acquire().then((release) => {
    order.push(4);
    return release;
  });
  await Promise.resolve();
  expect(order).toEqual([]);
  releases[0]?.();
  (await third)();
  releases[1]?.();
  (await fourth)();
  expect(order).toEqual([3, 4]);
});

test("a 429 halves the provider pool's limit and pauses its next calls; successes bring it back", async () => {
  const pool = new ProviderPool(8);
  await expect(
    pool.run(async () => {
      throw new ProviderFailure('rate_limited', '429', { retryAfterMs: 500 });
    }),
  ).rejects.toThrow('429');
  expect(pool.limit).toBe(4);

  // The next call waits out the Retry-After: a 5 ms timer set at the same moment fires first.
  const order: string[] = [];
  const timer = new Promise((resolve) => setTimeout(resolve, 5)).then(() => order.push('timer'));
  await pool.run(async () => {
    order.push('call');
  });
  await timer;
  expect(order).toEqual(['timer', 'call']);
  expect(pool.limit).toBe(5);

  for (let i = 0; i < 10; i++) await pool.run(async () => undefined);
  expect(pool.limit).toBe(8);
});
