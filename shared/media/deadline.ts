/**
 * The attempt's deadline as media code sees it: checked between steps, raced against work that can be abandoned, and
 * turned into the failures every provider reports (`timeout` when it passes, `unreadable_file` when the file is at
 * fault, `server` when the service's own processing is, `client` when the request cannot be made for another reason).
 */
import { ProviderFailure } from '../task.js';

/** setTimeout's largest delay; a longer one fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * An attempt's deadline (epoch ms) plus its abort signal; `label` prefixes failure messages ("media", "local provider").
 * It is itself a MediaDeadline, so it can be handed on to media preparation.
 */
export class Deadline {
  constructor(
    readonly signal: AbortSignal,
    readonly deadlineMs: number,
    readonly label = 'media',
  ) {}

  /** Milliseconds left (negative once passed). */
  remainingMs(): number {
    return this.deadlineMs - Date.now();
  }

  /** True once the deadline has passed or the attempt was aborted. */
  expired(): boolean {
    return this.signal.aborted || this.remainingMs() <= 0;
  }

  /** The timeout failure for work that was doing `stage`. */
  failure(stage: string): ProviderFailure {
    return new ProviderFailure('timeout', `${this.label}: deadline passed while ${stage}`);
  }

  /**
   * An `unreadable_file` failure: the client's file (not the provider, not the service) is at fault: it cannot be
   * decoded. A run whose every attempt fails so ends CORRUPT_FILE, not retryable (shared/worker/process-run.ts).
   */
  fileFailure(message: string, cause?: unknown): ProviderFailure {
    return new ProviderFailure(
      'unreadable_file',
      `${this.label}: ${message}`,
      cause === undefined ? undefined : { cause },
    );
  }

  /** A `server` failure: the service's own processing failed (pixels it decoded itself); a retry may succeed. */
  serviceFailure(message: string, cause?: unknown): ProviderFailure {
    return new ProviderFailure('server', `${this.label}: ${message}`, cause === undefined ? undefined : { cause });
  }

  /** A `client` failure: the request cannot be made (a provider limit or a caller's mistake), the file may be fine. */
  clientFailure(message: string): ProviderFailure {
    return new ProviderFailure('client', `${this.label}: ${message}`);
  }

  /** Throws the timeout failure if the deadline has passed or the attempt was aborted. */
  check(stage: string): void {
    if (this.expired()) throw this.failure(stage);
  }

  /** An abort signal for one request: aborts with the attempt's signal or when the deadline passes, whichever is first. */
  requestSignal(): AbortSignal {
    return AbortSignal.any([this.signal, AbortSignal.timeout(Math.max(1, this.remainingMs()))]);
  }

  /** Whole seconds left, at least 1: for sharp's own `timeout`, which stops libvips work a race cannot. */
  sharpSeconds(): number {
    return Math.max(1, Math.ceil(this.remainingMs() / 1000));
  }

  /** Calls `onExpire` once when the deadline passes or the signal aborts; returns a function that cancels the watch. */
  watch(onExpire: () => void): () => void {
    const fire = (): void => {
      cancel();
      onExpire();
    };
    const timer = setTimeout(fire, Math.min(MAX_TIMER_MS, Math.max(0, this.remainingMs())));
    this.signal.addEventListener('abort', fire, { once: true });
    const cancel = (): void => {
      clearTimeout(timer);
      this.signal.removeEventListener('abort', fire);
    };
    return cancel;
  }

  /** Settles with `work`, or rejects with a timeout when the deadline passes first (the work itself is abandoned). */
  race<T>(work: Promise<T>, stage: string): Promise<T> {
    this.check(stage);
    return new Promise<T>((resolve, reject) => {
      const cancel = this.watch(() => reject(this.failure(stage)));
      work.then(
        (value) => {
          cancel();
          resolve(value);
        },
        (error: unknown) => {
          cancel();
          reject(error);
        },
      );
    });
  }
}
