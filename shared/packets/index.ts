/**
 * Packets (contract-v1.2 §3): a PDF holding several documents, split by evidence on each page. Pure; the worker calls
 * it in this order: each page's evidence (`localPageEvidence`, or a model's answer parsed with `pageEvidence`), then
 * `splitPacket` over all pages at once, then one extraction per non-`other` document, then `documentReview` per
 * document and `packetReview` for the run, with `checkPartition` before the result is stored.
 * The API uses `packetRequestOf` and `packetEstimate` (imported directly: this index also loads the local engine's
 * layout rules). docs/decisions.md#packets-boundaries-by-evidence.
 */
export { classifyFile, LINK, linkScore, type PacketDocument, packetClasses, splitPacket } from './boundaries.js';
export { CLASSIFICATION_TASK, type PacketEstimate, packetEstimate } from './estimate.js';
export { blankEvidence, OTHER, type PageEvidence, pageEvidence } from './evidence.js';
export { localPageEvidence } from './local-evidence.js';
export {
  checkPartition,
  documentReview,
  type PacketDocumentResult,
  type PacketResult,
  packetDocument,
  packetResult,
  packetReview,
} from './result.js';
export { addCounts, countSplit, type SplitCounts, type SplitScore, scoreOf } from './score.js';
