/**
 * Bounded concurrency for the worker, without a dependency: a FIFO semaphore (the chunks of one run,
 * SERVICE_RUN_CONCURRENCY) and one pool per provider shared by every run of the process (SERVICE_PROVIDER_CONCURRENCY),
 * so that one 1,000-page run cannot take every connection to a provider from the runs beside it.
 * Not to undo: a 429 slows the provider's whole pool, not only the call that got it: every new call waits out its
 * Retry-After and the pool's limit halves, then grows back by one with each call that is not rate-limited.
 */
import type { ProviderAdapter } from '../providers/types.js';
import { ProviderFailure, type ProviderId } from '../task.js';

/** A counting semaphore: `acquire` resolves in call order once fewer than `limit` holders remain. */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private limitValue: number) {}

  get limit(): number {
    return this.limitValue;
  }

  /** Changes the limit; holders above a lowered limit keep their slot until they release it. */
  setLimit(limit: number): void {
    this.limitValue = Math.max(1, Math.floor(limit));
    this.wake();
  }

  /** Waits for a slot; call the returned function once, when done. */
  async acquire(): Promise<() => void> {
    if (this.active >= this.limitValue || this.waiting.length > 0) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.active += 1;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active -= 1;
      this.wake();
    };
  }

  private wake(): void {
    while (this.active < this.limitValue && this.waiting.length > 0) {
      this.active += 1;
      this.waiting.shift()?.();
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Most a Retry-After pauses a pool: a longer wait is the attempt's deadline's business. */
const MAX_PAUSE_MS = 60_000;

/** The calls to one provider from every run of the process. */
export class ProviderPool {
  private readonly slots: Semaphore;
  private pausedUntil = 0;

  constructor(
    private readonly maxConcurrency: number,
    private readonly now: () => number = Date.now,
  ) {
    this.slots = new Semaphore(maxConcurrency);
  }

  /** The current limit (lowered after a 429, back up to the maximum as calls succeed). */
  get limit(): number {
    return this.slots.limit;
  }

  /** Runs one call in a slot, after any pause a 429 asked for; a 429 slows the pool, any other outcome speeds it up. */
  async run<T>(call: () => Promise<T>): Promise<T> {
    const release = await this.slots.acquire();
    try {
      const wait = this.pausedUntil - this.now();
      if (wait > 0) await sleep(wait);
      const result = await call();
      this.slots.setLimit(Math.min(this.maxConcurrency, this.slots.limit + 1));
      return result;
    } catch (error: unknown) {
      if (error instanceof ProviderFailure && error.kind === 'rate_limited') this.slowDown(error.retryAfterMs);
      else this.slots.setLimit(Math.min(this.maxConcurrency, this.slots.limit + 1));
      throw error;
    } finally {
      release();
    }
  }

  /** A 429: new calls wait out its Retry-After (when given), and the limit halves. */
  slowDown(retryAfterMs: number | undefined): void {
    if (retryAfterMs !== undefined && retryAfterMs > 0) {
      this.pausedUntil = Math.max(this.pausedUntil, this.now() + Math.min(retryAfterMs, MAX_PAUSE_MS));
    }
    this.slots.setLimit(Math.max(1, Math.floor(this.slots.limit / 2)));
  }
}

/** `local` runs in the worker's own CPU (tesseract, mupdf): more calls than this only queue inside it. */
export const LOCAL_CONCURRENCY = 4;

const pools = new Map<ProviderId, ProviderPool>();

/** The process-wide pool of a provider, made at first use with `maxConcurrency` (`local`: at most LOCAL_CONCURRENCY). */
export function providerPool(provider: ProviderId, maxConcurrency: number): ProviderPool {
  let pool = pools.get(provider);
  if (!pool) {
    pool = new ProviderPool(provider === 'local' ? Math.min(LOCAL_CONCURRENCY, maxConcurrency) : maxConcurrency);
    pools.set(provider, pool);
  }
  return pool;
}

/** The adapters, each call going through its provider's pool. */
export function pooledAdapters(
  adapters: Partial<Record<ProviderId, ProviderAdapter>>,
  maxConcurrency: number,
): Partial<Record<ProviderId, ProviderAdapter>> {
  const pooled: Partial<Record<ProviderId, ProviderAdapter>> = {};
  for (const [id, adapter] of Object.entries(adapters) as [ProviderId, ProviderAdapter][]) {
    const pool = providerPool(id, maxConcurrency);
    pooled[id] = { id, invoke: (input, options) => pool.run(() => adapter.invoke(input, options)) };
  }
  return pooled;
}
