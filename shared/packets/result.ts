/**
 * A split run's result (contract-v1.2 §3): `{documents: [...]}`, one entry per document in page order, each with its
 * pages, class and classification confidence, and (unless `other`) its extraction: `result`, `fields`, `review`.
 * The run's review is needed when any document's is; a document's review is needed when its extraction's is or its
 * class is uncertain. `checkPartition` is the completeness rule every split result must pass before it is stored.
 */
import { fieldEvidence, review as reviewSchema } from '../contract.js';
import type { Review } from '../fields/types.js';
import * as z from '../zod.js';
import { OTHER } from './evidence.js';

const pageNumber = () => z.number().check(z.int(), z.minimum(1));

export const packetDocument = z
  .object({
    index: z.number().check(z.int(), z.minimum(0)),
    schemaId: z.string().check(z.meta({ description: 'The registry schema the document was classed as, or `other`' })),
    pages: z
      .object({ first: pageNumber(), last: pageNumber() })
      .check(z.meta({ description: "The document's pages in the packet, 1-based, both included" })),
    classification: z.object({ confidence: z.number().check(z.minimum(0), z.maximum(1)) }),
    result: z.optional(z.record(z.string(), z.unknown())),
    fields: z.optional(z.record(z.string(), fieldEvidence)),
    review: z.optional(reviewSchema),
  })
  .check(
    z.refine((d) => d.pages.first <= d.pages.last, { message: 'pages.first must not be after pages.last' }),
    z.refine((d) => (d.schemaId === OTHER) === (d.result === undefined), {
      message: 'an `other` document carries no result; every other document carries one',
      path: ['result'],
    }),
  );
export type PacketDocumentResult = z.infer<typeof packetDocument>;

export const packetResult = z.object({ documents: z.array(packetDocument).check(z.minLength(1)) });
export type PacketResult = z.infer<typeof packetResult>;

/**
 * Why `documents` is not a partition of pages 1..`pages` in order (indexes 0, 1, 2, … and each document starting on
 * the page after the previous one's last), or null when it is.
 */
export function checkPartition(
  documents: readonly { index: number; pages: { first: number; last: number } }[],
  pages: number,
): string | null {
  let next = 1;
  for (const [i, d] of documents.entries()) {
    if (d.index !== i) return `document ${i} has index ${d.index}`;
    if (d.pages.first !== next) return `document ${i} starts on page ${d.pages.first}, not ${next}`;
    if (d.pages.last < d.pages.first) return `document ${i} ends before it starts`;
    next = d.pages.last + 1;
  }
  return next === pages + 1 ? null : `the documents cover pages 1-${next - 1} of ${pages}`;
}

/**
 * A document's review: its extraction's (absent for `other`), and a reason more when its class's confidence is below
 * `threshold` (SERVICE_REVIEW_CONFIDENCE, as for fields).
 */
export function documentReview(confidence: number, extraction: Review | undefined, threshold: number): Review {
  const reasons = [...(extraction?.reasons ?? [])];
  if (confidence < threshold) reasons.push(`classification: below ${threshold} (${confidence.toFixed(2)})`);
  return { needed: (extraction?.needed ?? false) || confidence < threshold, reasons };
}

/** The run's review: needed when any document's is; each reason says which document it is about. */
export function packetReview(
  documents: readonly { index: number; schemaId: string; pages: { first: number; last: number }; review?: Review }[],
): Review {
  const reasons = documents.flatMap((d) =>
    (d.review?.reasons ?? []).map(
      (reason) => `document ${d.index} (${d.schemaId}, pages ${d.pages.first}-${d.pages.last}): ${reason}`,
    ),
  );
  return { needed: documents.some((d) => d.review?.needed === true), reasons };
}
