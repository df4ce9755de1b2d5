/**
 * Money and state transitions are exactly-once: idempotent creation (sequential and concurrent), tenant isolation,
 * a duplicated SQS message, and a worker crash before and after the settlement each charge exactly once.
 */
import { runQueue, tables } from '../../shared/infra/resources.js';
import { claimRun, releaseClaim, renewClaim } from '../../shared/store/runs.js';
import {
  call,
  fixture,
  KEYS,
  ledgerEntries,
  putRunRecord,
  runCount,
  runRecord,
  sendRunMessage,
  setCredit,
  stack,
  tenantRecord,
  upload,
  waitForFinal,
  waitForRunQueueDrained,
} from './client.js';

async function createdRun(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const uploadId = await upload('receipt.png', await fixture('receipt.png'));
  return call('POST', '/v1/runs', { body: { uploadId, prompt: 'Receipt', schemaId: 'receipt', ...body }, headers });
}

/** One hold and one settlement in the ledger, and the run's money matches them. */
async function expectSettledOnce(jobId: string) {
  const entries = await ledgerEntries('tenant-a', jobId);
  expect(entries.map((e) => e.kind).sort()).toEqual(['hold', 'settle']);
  const run = (await call('GET', `/v1/runs/${jobId}`)).body as {
    chargedUsd: number;
    refundedUsd: number;
    estimatedCostUsd: number;
  };
  const settle = entries.find((e) => e.kind === 'settle') as { chargedMicros: number; refundedMicros: number };
  expect(settle.chargedMicros / 1e6).toBeCloseTo(run.chargedUsd, 6);
  expect(settle.refundedMicros / 1e6).toBeCloseTo(run.refundedUsd, 6);
}

describe('idempotent creation', () => {
  test('the same Idempotency-Key and body returns the original response and holds nothing twice', async () => {
    const uploadId = await upload('receipt.png', await fixture('receipt.png'));
    const body = { uploadId, prompt: 'Receipt', schemaId: 'receipt' };
    const before = await runCount('tenant-a');
    const first = await call('POST', '/v1/runs', { body, headers: { 'idempotency-key': `k-${uploadId}` } });
    const second = await call('POST', '/v1/runs', {
      // Same body with keys in another order is the same request.
      body: { schemaId: 'receipt', prompt: 'Receipt', uploadId },
      headers: { 'idempotency-key': `k-${uploadId}` },
    });
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await runCount('tenant-a')).toBe(before + 1);
    const different = await call('POST', '/v1/runs', {
      body: { ...body, prompt: 'Other' },
      headers: { 'idempotency-key': `k-${uploadId}` },
    });
    expect(different.status).toBe(409);
    expect(different.body).toMatchObject({ error: { code: 'IDEMPOTENCY_KEY_REUSED' } });
    await waitForFinal(String(first.body.jobId));
    await expectSettledOnce(String(first.body.jobId));
  });

  test('concurrent requests with one key create one run', async () => {
    const uploadId = await upload('receipt.png', await fixture('receipt.png'));
    const before = await runCount('tenant-a');
    const replies = await Promise.all(
      Array.from({ length: 5 }, () =>
        call('POST', '/v1/runs', {
          body: { uploadId, prompt: 'Receipt' },
          headers: { 'idempotency-key': `c-${uploadId}` },
        }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual([202, 202, 202, 202, 202]);
    expect(new Set(replies.map((r) => r.body.jobId)).size).toBe(1);
    expect(await runCount('tenant-a')).toBe(before + 1);
    await waitForFinal(String(replies[0]?.body.jobId));
  });

  test('the same key used by another tenant is a different key', async () => {
    const a = await createdRun({}, { 'idempotency-key': 'shared-key-name' });
    const uploadB = await upload('receipt.png', await fixture('receipt.png'), { key: KEYS.b });
    const b = await call('POST', '/v1/runs', {
      key: KEYS.b,
      body: { uploadId: uploadB, prompt: 'Receipt' },
      headers: { 'idempotency-key': 'shared-key-name' },
    });
    expect(b.status).toBe(202);
    expect(b.body.jobId).not.toBe(a.body.jobId);
    await waitForFinal(String(a.body.jobId));
    await waitForFinal(String(b.body.jobId), { key: KEYS.b });
  });
});

describe('credit under concurrency', () => {
  test('runs created at the same moment against a limited credit: exactly those it covers are held, the rest are refused and leave nothing', async () => {
    const uploadId = await upload('receipt.png', await fixture('receipt.png'), { key: KEYS.b });
    const body = { uploadId, prompt: 'Receipt', schemaId: 'receipt' };
    const before = await tenantRecord('tenant-b');
    const probe = await call('POST', '/v1/runs', { body, key: KEYS.b });
    expect(probe.status).toBe(202);
    await waitForFinal(String(probe.body.jobId), { key: KEYS.b });
    const estimate = Math.round(Number(probe.body.estimatedCostUsd) * 1e6);

    // Credit for three runs and half of a fourth; eight requests race for it.
    const credit = 3 * estimate + Math.floor(estimate / 2);
    await setCredit('tenant-b', credit);
    const held = Number((await tenantRecord('tenant-b')).heldMicros ?? 0);
    const runsBefore = await runCount('tenant-b');
    const ledgerBefore = (await ledgerEntries('tenant-b')).length;
    const replies = await Promise.all(Array.from({ length: 8 }, () => call('POST', '/v1/runs', { body, key: KEYS.b })));

    const accepted = replies.filter((r) => r.status === 202);
    const refused = replies.filter((r) => r.status !== 202);
    expect(accepted).toHaveLength(3);
    for (const reply of refused)
      expect(reply.body).toMatchObject({ error: { code: 'INSUFFICIENT_CREDIT', status: 402 } });
    const tenant = await tenantRecord('tenant-b');
    expect(tenant.availableMicros).toBe(credit - 3 * estimate);
    // Three whole holds were taken. The worker may already have settled some of them (a receipt takes a second or
    // two): a settled run's hold has left `heldMicros`, so what is held now is three holds less whole settled ones.
    const settledSinceHold = (held + 3 * estimate - Number(tenant.heldMicros)) / estimate;
    expect([0, 1, 2, 3]).toContain(settledSinceHold);
    expect(await runCount('tenant-b')).toBe(runsBefore + 3);
    expect((await ledgerEntries('tenant-b')).length).toBe(ledgerBefore + 3);

    // Settled: the credit keeps what was charged, gets the refunds back, and nothing stays held.
    let charged = 0;
    for (const reply of accepted) {
      const run = await waitForFinal(String(reply.body.jobId), { key: KEYS.b });
      expect(run.body.status).toBe('completed');
      charged += Math.round(Number(run.body.chargedUsd) * 1e6);
    }
    const settled = await tenantRecord('tenant-b');
    expect(settled.availableMicros).toBe(credit - charged);
    expect(Number(settled.heldMicros)).toBe(held);
    await setCredit('tenant-b', Number(before.availableMicros ?? 1_000_000));
  });
});

describe('tenant isolation', () => {
  test("another tenant's run and upload are invisible (404, never 403)", async () => {
    const created = await createdRun({});
    const jobId = String(created.body.jobId);
    const asB = await call('GET', `/v1/runs/${jobId}`, { key: KEYS.b });
    const unknown = await call('GET', '/v1/runs/run_00000000000000000000000000000000', { key: KEYS.b });
    expect(asB.status).toBe(404);
    expect((asB.body.error as { code: string }).code).toBe((unknown.body.error as { code: string }).code);
    expect((await call('POST', `/v1/runs/${jobId}/verify`, { key: KEYS.b, body: { accepted: true } })).status).toBe(
      404,
    );
    const stolen = await call('POST', '/v1/runs', {
      key: KEYS.b,
      body: { uploadId: created.body.uploadId, prompt: 'p' },
    });
    expect(stolen.status).toBe(404);
    expect(stolen.body).toMatchObject({ error: { code: 'UPLOAD_NOT_FOUND' } });
    await waitForFinal(jobId);
  });

  test('an upload may be used by several runs', async () => {
    const uploadId = await upload('receipt.png', await fixture('receipt.png'));
    const one = await call('POST', '/v1/runs', { body: { uploadId, prompt: 'one', outputFormat: 'text' } });
    const two = await call('POST', '/v1/runs', { body: { uploadId, prompt: 'two', outputFormat: 'text' } });
    expect([one.status, two.status]).toEqual([202, 202]);
    expect((await waitForFinal(String(one.body.jobId))).body.status).toBe('completed');
    expect((await waitForFinal(String(two.body.jobId))).body.status).toBe('completed');
  });
});

describe('worker exactly-once', () => {
  test('a duplicated SQS message charges exactly once', async () => {
    const created = await createdRun({});
    const jobId = String(created.body.jobId);
    await sendRunMessage(jobId);
    await sendRunMessage(jobId);
    const final = await waitForFinal(jobId);
    expect(final.body.status).toBe('completed');
    // Once both duplicates have been handled and deleted, nothing has moved.
    const tenantAfter = await tenantRecord('tenant-a');
    await waitForRunQueueDrained();
    await expectSettledOnce(jobId);
    expect((await tenantRecord('tenant-a')).chargedMicros).toBe(tenantAfter.chargedMicros);
    expect((await call('GET', `/v1/runs/${jobId}`)).body.completedAt).toBe(final.body.completedAt);
  });

  test('a crash after the provider answered and before settlement is redelivered and charged once', async () => {
    const created = await createdRun({ metadata: { localFault: 'crash-before-settle' } });
    const jobId = String(created.body.jobId);
    const final = await waitForFinal(jobId, { timeoutMs: 60_000 });
    expect(final.body.status).toBe('completed');
    await expectSettledOnce(jobId);
  });

  test('a crash after settlement (message not deleted) is redelivered and changes nothing', async () => {
    const created = await createdRun({ metadata: { localFault: 'crash-after-settle' } });
    const jobId = String(created.body.jobId);
    const final = await waitForFinal(jobId, { timeoutMs: 60_000 });
    expect(final.body.status).toBe('completed');
    const charged = (await tenantRecord('tenant-a')).chargedMicros;
    // The message was not deleted: it comes back after the visibility timeout (3 s here), and is then handled.
    await waitForRunQueueDrained();
    await expectSettledOnce(jobId);
    expect((await tenantRecord('tenant-a')).chargedMicros).toBe(charged);
  });

  test('a run whose message never reached a worker is sent again by the reconciler, completes and is charged once', async () => {
    const created = await createdRun({ metadata: { localFault: 'lose-message' } });
    const jobId = String(created.body.jobId);
    const final = await waitForFinal(jobId, { timeoutMs: 60_000 });
    expect(final.body.status).toBe('completed');
    // One resend. Deliveries: at least the resent message's; a loaded machine can run the OCR past the tests' 3 s
    // visibility timeout, and SQS then hands the message out again (the claim keeps the run processed once).
    const record = await runRecord(jobId);
    expect(record.resends).toBe(1);
    expect(record.deliveries).toBeGreaterThanOrEqual(1);
    expect((await runRecord(jobId)).queuedShard).toBeUndefined();
    await expectSettledOnce(jobId);
  });

  test('a run whose worker died holding it (nothing thrown, no heartbeat) is taken over by the next receive after the lease, and charged once', async () => {
    // The suite's stack leases for 10 s: the dead delivery's lease lapses, its message (hidden for the lease) comes back.
    const created = await createdRun({ metadata: { localFault: 'crash-hard-once' } });
    const jobId = String(created.body.jobId);
    const final = await waitForFinal(jobId, { timeoutMs: 60_000 });
    expect(final.body.status).toBe('completed');
    // The dead delivery and the one that took over: no resend, no trip through the DLQ.
    expect(await runRecord(jobId)).toMatchObject({ deliveries: 2, lastReceiveCount: 2 });
    expect((await runRecord(jobId)).resends).toBeUndefined();
    await expectSettledOnce(jobId);
  });

  test('a run whose every delivery crashes hard (nothing thrown: the message ends in the DLQ) is failed and refunded by the reconciler', async () => {
    const created = await createdRun({ metadata: { localFault: 'crash-hard' } });
    const jobId = String(created.body.jobId);
    const final = await waitForFinal(jobId, { timeoutMs: 100_000 });
    expect(final.body).toMatchObject({
      status: 'failed',
      error: { code: 'INTERNAL_ERROR', status: 500, retryable: true },
      chargedUsd: 0,
      refundedUsd: created.body.estimatedCostUsd,
    });
    expect(await runRecord(jobId)).toMatchObject({ deliveries: runQueue.maxReceiveCount });
    await expectSettledOnce(jobId);
  });

  test('the tenant ledger balances: held = estimates − charged − refunded over settled runs', async () => {
    const tenant = await tenantRecord('tenant-a');
    const entries = await ledgerEntries('tenant-a');
    const holds = entries.filter((e) => e.kind === 'hold').reduce((s, e) => s + Number(e.amountMicros), 0);
    const settles = entries.filter((e) => e.kind === 'settle');
    const charged = settles.reduce((s, e) => s + Number(e.chargedMicros), 0);
    const refunded = settles.reduce((s, e) => s + Number(e.refundedMicros), 0);
    expect(tenant.chargedMicros).toBe(charged);
    expect(tenant.refundedMicros).toBe(refunded);
    expect(tenant.heldMicros).toBe(holds - charged - refunded);
  });
});

describe("the worker's claim on a run, on DynamoDB Local", () => {
  const saved = { table: process.env[tables.runs.envVar], endpoint: process.env.AWS_ENDPOINT_URL_DYNAMODB };
  afterAll(() => {
    // Later test files share this process's environment.
    for (const [name, value] of [
      [tables.runs.envVar, saved.table],
      ['AWS_ENDPOINT_URL_DYNAMODB', saved.endpoint],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  // The store reads the table name and the client its endpoint at first use: point both at the local stack first.
  beforeAll(() => {
    process.env[tables.runs.envVar] = stack().resources.tables.runs;
    process.env.AWS_ENDPOINT_URL_DYNAMODB = stack().endpoints.dynamodb;
  });

  test('deliveries at the same moment: one claims the run, the others are counted, call nothing and say whose lease it is', async () => {
    // A bare queued record: no tenant (not listed), no queuedShard (the reconciler never sees it), no message.
    const jobId = `run_claim_${Date.now()}`;
    await putRunRecord({ jobId, status: 'queued', stage: 'waiting' });
    const lease = new Date(Date.now() + 60_000);
    const claims = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        claimRun(jobId, { leaseUntil: lease, holder: `worker ${i}`, receiveCount: 1 }),
      ),
    );
    const winner = claims.findIndex((c) => c.state === 'claimed');
    expect(claims.map((c) => c.state).sort()).toEqual(['claimed', 'leased', 'leased', 'leased', 'leased', 'leased']);
    for (const claim of claims.filter((c) => c.state === 'leased')) {
      expect(claim).toEqual({ state: 'leased', lease: { holder: `worker ${winner}`, until: lease.getTime() } });
    }
    expect(await runRecord(jobId)).toMatchObject({
      deliveries: 6,
      stage: 'processing',
      leaseUntil: lease.getTime(),
      leaseHolder: `worker ${winner}`,
    });

    // Only the holder renews its lease; a lease given up, or lapsed, is taken by the next delivery.
    const renewed = new Date(lease.getTime() + 30_000);
    expect(await renewClaim(jobId, 'not the holder', renewed)).toBe(false);
    expect(await renewClaim(jobId, `worker ${winner}`, renewed)).toBe(true);
    expect((await runRecord(jobId)).leaseUntil).toBe(renewed.getTime());
    await releaseClaim(jobId, `worker ${winner}`);
    const next = new Date(Date.now() + 60_000);
    expect(await claimRun(jobId, { leaseUntil: next, holder: 'second', receiveCount: 2 })).toEqual({
      state: 'claimed',
    });
    const later = {
      leaseUntil: new Date(next.getTime() + 60_000),
      holder: 'third',
      receiveCount: 3,
      now: new Date(next.getTime() + 1),
    };
    expect(await claimRun(jobId, later)).toEqual({ state: 'claimed' });
    // The lease lapsed and was taken over: its first holder can neither renew nor release it.
    expect(await renewClaim(jobId, 'second', new Date(next.getTime() + 90_000))).toBe(false);
    await releaseClaim(jobId, 'second');
    expect(await runRecord(jobId)).toMatchObject({ leaseUntil: next.getTime() + 60_000, leaseHolder: 'third' });

    await putRunRecord({ ...(await runRecord(jobId)), status: 'completed' });
    // Nothing is renewed on a final run.
    expect(await renewClaim(jobId, 'third', new Date(next.getTime() + 120_000))).toBe(false);
    const afterAll = {
      leaseUntil: new Date(Date.now() + 60_000),
      holder: 'late',
      receiveCount: 1,
      now: new Date(Date.now() + 600_000),
    };
    expect(await claimRun(jobId, afterAll)).toEqual({ state: 'final' });
    expect(await runRecord(jobId)).toMatchObject({ deliveries: 8, lastReceiveCount: 3 });
  });
});
