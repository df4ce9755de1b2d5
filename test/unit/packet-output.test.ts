/** `vision analyze --split` output (cli/packet-output.ts): a document is numbered as the API and its review name it. */
import { splitBlocks } from '../../cli/packet-output.js';
import type { RunResponse } from '../../sdk/index.js';

test("each block names its document by the API's index, the number the run's review reasons use", () => {
  const run = {
    jobId: 'run_1',
    status: 'completed',
    chargedUsd: 0.0005,
    review: { needed: true, reasons: ['document 1 (invoice, pages 2-3): totalDue: missing'] },
    result: {
      documents: [
        { index: 0, schemaId: 'other', pages: { first: 1, last: 1 }, classification: { confidence: 0.9 } },
        {
          index: 1,
          schemaId: 'invoice',
          pages: { first: 2, last: 3 },
          classification: { confidence: 0.95 },
          result: { totalDue: null },
          review: { needed: true, reasons: ['totalDue: missing'] },
        },
      ],
    },
  } as unknown as RunResponse;
  const out = splitBlocks(run) ?? '';
  expect(out).toContain('== document 0: other, page 1 (classification 0.90)');
  expect(out).toContain('== document 1: invoice, pages 2-3 (classification 0.95, review needed)');
});
