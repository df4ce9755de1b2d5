/**
 * The signal that a batch run's attempt went to (or still waits in) the batch lane: thrown by the worker's batch lane
 * adapter (shared/worker/batch-lane.ts) through the attempt loop, which lets it pass (it is not a provider failure),
 * up to the delivery, which parks the run (`stage: batched`) and ends. The batcher sends the run back once the
 * request is resolved.
 */
export class BatchParked extends Error {
  constructor(readonly requestId: string) {
    super(`waiting for the batch lane: ${requestId}`);
    this.name = 'BatchParked';
  }
}
