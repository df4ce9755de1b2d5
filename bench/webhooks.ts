/**
 * Webhooks on the real local stack (issue #20's figures). Latency: `runs` runs of the text-layer PDF, 4 in flight
 * (each lane creates a run and waits for its webhook, polling nothing), each timed from the run's `completedAt`
 * (written by its settlement) to the moment a receiver on 127.0.0.1 gets its event. Loss: for `outageSeconds` a second receiver fails half of its requests (500) while runs keep completing, then
 * recovers; every event must reach it with a 2xx, through the retries, before the deadline (the deployed retry
 * schedule: the fourth try comes about 6 minutes after the first, past any 5-minute outage), and nothing may reach the
 * webhook dead-letter queue.
 */
import { createServer, type Server } from 'node:http';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { VisionClient } from '../sdk/index.js';
import { webhookSettings } from '../shared/infra/resources.js';
import { startStack } from '../test/integration/stack.js';
import { type Summary, summarize } from './stats.js';

const KEY = 'vk_bench_webhooks_0123456789abcdef0123';
const FILE = new URL('../test/fixtures/text.pdf', import.meta.url).pathname;

export interface WebhooksResult {
  latency: Summary & { runs: number };
  outage: {
    seconds: number;
    runs: number;
    /** Events a 2xx acknowledged, of `runs`. */
    acknowledged: number;
    lost: number;
    /** Requests the receiver failed (500) during the outage. */
    failedRequests: number;
    /** Requests in all (tries and duplicates). */
    requests: number;
    /** The last event's acknowledgement, seconds after the receiver recovered. */
    lastAfterRecoverySeconds: number;
    deadLettered: number;
  };
}

interface Receiver {
  url: string;
  /** First 2xx arrival per event id, epoch ms. */
  acknowledged: Map<string, number>;
  completedAt: Map<string, string>;
  requests: number;
  failed: number;
  /** Whether to fail this request. */
  fail: () => boolean;
  server: Server;
}

async function receiver(fail: () => boolean): Promise<Receiver> {
  const state = { requests: 0, failed: 0 };
  const acknowledged = new Map<string, number>();
  const completedAt = new Map<string, string>();
  const r: Receiver = { url: '', acknowledged, completedAt, requests: 0, failed: 0, fail, server: undefined as never };
  r.server = createServer((req, res) => {
    const arrived = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      r.requests = ++state.requests;
      if (r.fail()) {
        r.failed = ++state.failed;
        res.writeHead(500).end();
        return;
      }
      res.writeHead(204).end();
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; data: { completedAt: string } };
      if (!acknowledged.has(event.id)) acknowledged.set(event.id, arrived);
      completedAt.set(event.id, event.data.completedAt);
    });
  });
  await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', resolve));
  const address = r.server.address();
  r.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`;
  return r;
}

/**
 * Runs `total` runs, `inFlight` at a time, until `stopAt`; returns their event ids. With `heard`, a lane moves on when
 * that receiver acknowledged the run's event (no polling: the webhook is the notification); without, it polls the run
 * until final (the SDK's default pace).
 */
async function runMany(
  vision: VisionClient,
  total: number,
  inFlight: number,
  options: { stopAt?: number; heard?: Receiver } = {},
): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  const params = { prompt: 'Read the document', outputFormat: 'text' as const };
  const lane = async () => {
    while (next < total && (options.stopAt === undefined || Date.now() < options.stopAt)) {
      next++;
      let jobId: string;
      if (options.heard) {
        jobId = (await vision.submit(FILE, params)).jobId;
        const id = `evt_${jobId.replace(/^run_/, '')}`;
        const heard = options.heard;
        await until(() => heard.acknowledged.has(id), Date.now() + 60_000);
      } else {
        jobId = (await vision.analyze(FILE, params)).jobId;
      }
      ids.push(`evt_${jobId.replace(/^run_/, '')}`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return ids;
}

async function until(check: () => boolean, deadline: number): Promise<void> {
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

export async function measureWebhooks(options: {
  runs: number;
  outageSeconds: number;
  log: (line: string) => void;
}): Promise<WebhooksResult> {
  const stack = await startStack({
    VISION_DEV_API_KEYS: `bench-webhooks:${KEY}`,
    VISION_PROVIDERS: 'local',
    LOCAL_RATE_LIMIT_RPS: '1000',
    LOCAL_RATE_LIMIT_BURST: '1000',
    LOCAL_RECONCILE_INTERVAL_SECONDS: '5',
  });
  const receivers: Receiver[] = [];
  try {
    const vision = new VisionClient({ baseUrl: stack.info.baseUrl, apiKey: KEY });

    // Latency: a receiver that always accepts.
    const fast = await receiver(() => false);
    receivers.push(fast);
    const hook = await vision.createWebhook({ url: fast.url });
    await runMany(vision, 5, 2, { heard: fast }); // warm-up
    const warm = new Set(fast.acknowledged.keys());
    const ids = await runMany(vision, options.runs, 4, { heard: fast });
    await until(() => ids.every((id) => fast.acknowledged.has(id)), Date.now() + 60_000);
    const latencies = ids
      .filter((id) => !warm.has(id) && fast.acknowledged.has(id))
      .map((id) => (fast.acknowledged.get(id) ?? 0) - Date.parse(fast.completedAt.get(id) ?? ''));
    const latency = { ...summarize(latencies), runs: ids.length };
    options.log(`  completed → received: p50 ${latency.p50} ms, p99 ${latency.p99} ms over ${latencies.length} runs`);
    await vision.deleteWebhook(hook.id);

    // Loss: half of the requests fail during the outage.
    let outage = true;
    const flaky = await receiver(() => outage && Math.random() < 0.5);
    receivers.push(flaky);
    await vision.createWebhook({ url: flaky.url });
    const outageEnds = Date.now() + options.outageSeconds * 1000;
    options.log(`  receiver failing half its requests for ${options.outageSeconds} s while runs complete…`);
    const during = await runMany(vision, Number.MAX_SAFE_INTEGER, 2, { stopAt: outageEnds });
    await until(() => Date.now() >= outageEnds, outageEnds + 1000);
    outage = false;
    const recovered = Date.now();
    // The longest wait an event can need: its tries before the outage ended, then one more (with jitter).
    const delays = webhookSettings.retryDelaysSeconds;
    const worst = delays.reduce(
      (acc, d) =>
        acc.sum <= options.outageSeconds ? { sum: acc.sum + d * (1 + webhookSettings.jitter), n: acc.n + 1 } : acc,
      { sum: 0, n: 0 },
    ).sum;
    await until(() => during.every((id) => flaky.acknowledged.has(id)), recovered + (worst + 60) * 1000);
    const acknowledged = during.filter((id) => flaky.acknowledged.has(id)).length;
    const last = Math.max(...during.map((id) => flaky.acknowledged.get(id) ?? 0));

    const sqs = new SQSClient({
      endpoint: stack.info.endpoints.sqs,
      useQueueUrlAsEndpoint: false,
      region: 'us-east-1',
      // The emulator checks no signature; the SDK still wants some.
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const attributes = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: stack.info.resources.webhookDeadLetterQueueUrl,
        AttributeNames: ['ApproximateNumberOfMessages'],
      }),
    );
    sqs.destroy();
    const result: WebhooksResult['outage'] = {
      seconds: options.outageSeconds,
      runs: during.length,
      acknowledged,
      lost: during.length - acknowledged,
      failedRequests: flaky.failed,
      requests: flaky.requests,
      lastAfterRecoverySeconds: Math.max(0, Math.round((last - recovered) / 100) / 10),
      deadLettered: Number(attributes.Attributes?.ApproximateNumberOfMessages ?? 0),
    };
    options.log(
      `  ${result.runs} runs, ${result.failedRequests} of ${result.requests} requests failed, ${result.lost} lost, last acknowledged ${result.lastAfterRecoverySeconds} s after recovery`,
    );
    return { latency, outage: result };
  } finally {
    for (const r of receivers) {
      r.server.closeAllConnections();
      r.server.close();
    }
    await stack.stop();
  }
}
