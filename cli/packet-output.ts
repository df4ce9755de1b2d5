/**
 * How `vision analyze --split` prints a split run (contract-v1.2 §3): a line for the run, then one block per document
 * (its index, class, the packet's pages, classification confidence, whether it needs review, then its result as JSON;
 * an `other` document says it was not extracted). Any other run is printed as JSON by the caller. A document is named
 * by its `index` as the API gives it (from 0), as the review's reasons name it.
 */
import type { RunResponse, SplitDocument } from '../sdk/index.js';
import { isSplitResult } from '../sdk/index.js';
import { jsonText } from './output.js';

/** The blocks of a completed split run, or undefined when `run` is not one. */
export function splitBlocks(run: RunResponse): string | undefined {
  if (run.status !== 'completed' || !isSplitResult(run.result)) return undefined;
  const { documents } = run.result;
  const head =
    `run ${run.jobId}: ${documents.length} document${documents.length === 1 ? '' : 's'}, ` +
    `charged ${run.chargedUsd} USD\n`;
  return head + documents.map(documentBlock).join('');
}

function documentBlock(doc: SplitDocument): string {
  const pages =
    doc.pages.first === doc.pages.last ? `page ${doc.pages.first}` : `pages ${doc.pages.first}-${doc.pages.last}`;
  const review = doc.review?.needed ? ', review needed' : '';
  const title =
    `\n== document ${doc.index}: ${doc.schemaId}, ${pages} ` +
    `(classification ${doc.classification.confidence.toFixed(2)}${review})\n`;
  const body = doc.result === undefined ? '(not extracted: none of the allowed schemas)\n' : jsonText(doc.result);
  return title + body;
}
