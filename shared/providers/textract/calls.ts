/**
 * One Textract attempt's calls: the client, the deadline (an abort signal fires when it passes), one call with its
 * failure mapping, and an asynchronous job started, polled at the interval and read page by page, its pages billed
 * even when we stop waiting.
 */
import type { DocumentMetadata, TextractClient } from '@aws-sdk/client-textract';
import type { Deadline } from '../../media/index.js';
import { ProviderFailure, type ProviderUsage } from '../../task.js';
import { redactAwsCredentials } from '../aws-credentials.js';
import { invalidOutput, toFailure } from './failures.js';

export interface AsyncJobPage {
  JobStatus?: string;
  StatusMessage?: string;
  NextToken?: string;
  DocumentMetadata?: DocumentMetadata;
}

/** One attempt: the client, the deadline, and an abort signal that fires when the deadline passes. */
export class Attempt {
  private readonly controller = new AbortController();
  private readonly cancelWatch: () => void;

  constructor(
    readonly client: TextractClient,
    readonly deadline: Deadline,
    private readonly pollIntervalMs: number,
  ) {
    this.cancelWatch = deadline.watch(() => this.controller.abort());
  }

  /** Stops the deadline watch. */
  finish(): void {
    this.cancelWatch();
  }

  /**
   * One SDK call within the deadline, its errors mapped. `billed`: what the call costs if Textract did the work;
   * `jobStarted`: an async job is running, so any failure carries `billed`.
   */
  async call<T>(
    operation: string,
    send: (options: { abortSignal: AbortSignal }) => Promise<T>,
    billed?: ProviderUsage,
    jobStarted = false,
  ): Promise<T> {
    try {
      this.deadline.check(`starting ${operation}`);
      return await send({ abortSignal: this.controller.signal });
    } catch (error) {
      throw toFailure(error, operation, this.deadline, billed, jobStarted);
    }
  }

  /** Waits before the next poll: `ms` (the poll interval by default), or less when the deadline is nearer. */
  private async pause(billed: ProviderUsage, ms = this.pollIntervalMs): Promise<void> {
    const stage = 'waiting for the Textract job';
    let timer: NodeJS.Timeout | undefined;
    try {
      this.deadline.check(stage);
      const wait = Math.min(ms, this.deadline.remainingMs());
      await this.deadline.race(
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, wait);
        }),
        stage,
      );
    } catch (error) {
      throw toFailure(error, stage, this.deadline, billed, true);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * One Get request of a running job. A throttled poll does not stop the job (it runs, and is billed, regardless):
   * it is asked again after Retry-After or the poll interval, within the deadline.
   */
  private async poll<P>(
    operation: string,
    fetch: (options: { abortSignal: AbortSignal }) => Promise<P>,
    billed: ProviderUsage,
  ): Promise<P> {
    for (;;) {
      try {
        return await this.call(operation, fetch, billed, true);
      } catch (error) {
        if (!(error instanceof ProviderFailure) || error.kind !== 'rate_limited') throw error;
        await this.pause(billed, error.retryAfterMs);
      }
    }
  }

  /**
   * Starts an async job and returns every page of its results: polls until the job leaves IN_PROGRESS, then follows
   * NextToken. From the start on the job's pages are billed, so every failure carries `billed` — except a FAILED job,
   * which Textract does not charge for.
   */
  async job<P extends AsyncJobPage>(
    name: string,
    start: (options: { abortSignal: AbortSignal }) => Promise<{ JobId?: string }>,
    get: (jobId: string, nextToken: string | undefined, options: { abortSignal: AbortSignal }) => Promise<P>,
    billed: ProviderUsage,
  ): Promise<P[]> {
    // A Start that times out may have started the job: the timeout carries its pages.
    const { JobId: jobId } = await this.call(`Start${name}`, start, billed);
    if (!jobId) throw invalidOutput(`Start${name} returned no JobId`);
    let first: P;
    for (;;) {
      const page = await this.poll(`Get${name}`, (o) => get(jobId, undefined, o), billed);
      if (page.JobStatus === 'IN_PROGRESS') {
        await this.pause(billed);
        continue;
      }
      if (page.JobStatus === 'FAILED') {
        // Textract's own reason, e.g. "Request has unsupported document format".
        throw new ProviderFailure(
          'server',
          `textract: the ${name} job failed: ${redactAwsCredentials(page.StatusMessage ?? 'no reason given')}`,
        );
      }
      if (page.JobStatus !== 'SUCCEEDED' && page.JobStatus !== 'PARTIAL_SUCCESS') {
        throw invalidOutput(`Get${name} returned job status ${String(page.JobStatus)}`, billed);
      }
      first = page;
      break;
    }
    const pages = [first];
    const seen = new Set<string>();
    for (let token = first.NextToken; token; token = pages.at(-1)?.NextToken) {
      if (seen.has(token)) throw invalidOutput(`Get${name} repeated a NextToken`, billed);
      seen.add(token);
      const next = token;
      pages.push(await this.poll(`Get${name}`, (o) => get(jobId, next, o), billed));
    }
    return pages;
  }
}
