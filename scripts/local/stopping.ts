/**
 * How the local stack stops: every step it started is undone in reverse order, on a signal (Ctrl-C, a TERM from
 * `npm start`'s parent, a closed terminal), when the process that started it goes, or on a fatal error.
 * Not to undo: a stop that was asked for is not an error. Once runs in progress are abandoned (`abandon`), what they
 * still print or throw as the engines and emulators go is not shown; only a failed step of stopping is. And the
 * process ends within 5 s whatever hangs (its 'exit' hook, scripts/local/emulators.ts, kills DynamoDB Local).
 * Why: docs/decisions.md#the-local-stacks-data-output-and-shutdown
 */
import { type LogEntry, log } from '../../shared/log.js';

const STEP_FAILED = 'a step of stopping failed';
/** Whatever hangs, the process ends this long after a stop began. */
const HARD_STOP_MS = 4500;

export interface Stopping {
  /** Registers a step to undo at stop (steps run in reverse order of registration). */
  onStop(step: () => Promise<void>): void;
  /** Stops (once): runs every step, then `finish()`, then exits with `code`. */
  stop(code: number): Promise<void>;
  readonly stopping: boolean;
  /** Whether a log entry is shown: every one, until work in progress was abandoned. */
  shows(entry: LogEntry): boolean;
  /** Work in progress is left to fail as the stack goes: from now on it is not shown, and what it throws is ignored. */
  abandon(): void;
  /** Stops on INT, TERM and HUP, and when the process that started this one goes (checked every second). */
  watchSignalsAndParent(): void;
}

export function createStopping(finish: () => void = () => {}): Stopping {
  const steps: (() => Promise<void>)[] = [];
  let stopping = false;
  let abandoned = false;

  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => {
      finish();
      process.exit(code);
    }, HARD_STOP_MS).unref();
    for (const step of steps.reverse()) {
      await step().catch((error: unknown) => log.warn(STEP_FAILED, { error }));
    }
    finish();
    process.exit(code);
  };

  return {
    onStop: (step) => {
      steps.push(step);
    },
    stop,
    get stopping() {
      return stopping;
    },
    shows: (entry) => !abandoned || entry.message === STEP_FAILED,
    abandon: () => {
      abandoned = true;
      // The OCR engine's threads, say, stopped under a run throw from their own callbacks.
      const ignore = (error: unknown) => log.debug('abandoned work failed as the stack stopped', { error });
      process.on('uncaughtException', ignore);
      process.on('unhandledRejection', ignore);
    },
    watchSignalsAndParent: () => {
      for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
        process.on(signal, () => {
          log.info(`${signal}: stopping`);
          void stop(0);
        });
      }
      // `npm start` killed without passing the signal on, a supervisor that died: this process is then adopted by
      // another, and nothing else would ever stop it.
      const parent = process.ppid;
      setInterval(() => {
        if (stopping || process.ppid === parent) return;
        log.info(`the process that started the stack (pid ${parent}) has ended: stopping`);
        void stop(0);
      }, 1000).unref();
    },
  };
}
