/**
 * The shapes of per-field evidence (contract-v1.1 §3): the words a run saw on its pages, and what a result's fields
 * are grounded to. Types only: the provider adapters produce `PageWords`, shared/fields grounds a result on them, the
 * store keeps `Fields` and `Review` on the run.
 * Not to undo: every box is relative to its page, each number in [0, 1], origin top-left (Textract's geometry), and
 * `page` is 1-based in the WHOLE document (a chunk's words are offset before they leave the chunk).
 */
import type { FieldSpec } from '../task.js';

/** `[x0, y0, x1, y1]`, relative to the page, origin top-left, each in [0, 1]. */
export type BBox = [number, number, number, number];

/** Who read the words of a page: an OCR engine (the local provider's PaddleOCR, or tesseract.js where it cannot load), or a PDF's text layer. */
export type WordSource = 'textract' | 'paddleocr' | 'tesseract' | 'text-layer';

/** One word (or token without spaces) as read on a page. */
export interface EvidenceWord {
  text: string;
  bbox: BBox;
  /** The reader's own confidence in [0, 1] (Textract's and tesseract's ÷ 100, PaddleOCR's mean character probability); absent for a PDF text layer. */
  confidence?: number;
}

/** The words of one page in reading order. */
export interface PageWords {
  /** 1-based page of the whole document (an image is page 1). */
  page: number;
  source: WordSource;
  words: EvidenceWord[];
}

/** Where one value stands in the document, and how sure the run is of it. */
export interface FieldEvidence {
  confidence: number;
  page?: number;
  /** Absent when the value has no support in the document. */
  bbox?: BBox;
  /** The document text the value was read from, ≤ 500 characters. */
  source?: string;
  alternatives?: { value: unknown; page?: number }[];
  /** For an array of objects: one entry per item, keyed by the item's fields. */
  items?: Record<string, FieldEvidence>[];
}

/** Keyed like the result's top level. */
export type Fields = Record<string, FieldEvidence>;

export interface Review {
  needed: boolean;
  reasons: string[];
}

/** What grounding is given: the shaped result, the task's fields, and every word the run has. */
export interface GroundInput {
  result: Record<string, unknown>;
  /** The schema's fields (null: no schema, every top-level key of `result` is a field, none required). */
  fieldSpecs: FieldSpec[] | null;
  words: PageWords[];
  /** The provider's own confidence for the whole answer in [0, 1], when it offers one. */
  nativeConfidence?: number;
  /** The provider's own confidence per top-level field in [0, 1] (OpenAI's logprobs), used in place of the native one. */
  valueConfidence?: Record<string, number>;
  /** Conflicting values a chunked run's merge kept, per top-level field. */
  alternatives?: Record<string, { value: unknown; page?: number }[]>;
  /** SERVICE_REVIEW_CONFIDENCE: a required field below it needs review. */
  reviewThreshold: number;
  /** "Today" for the date checks (a receipt dated in the future). */
  now: Date;
  /** Grounding stops looking after this long; the fields left get no bbox and a reason. Default 250 ms. */
  budgetMs?: number;
}

export interface Grounded {
  fields: Fields;
  /** The run's confidence: the documented aggregate of its fields (docs/confidence.md). */
  confidence: number;
  review: Review;
  /** Fields with a value that no word supports (the worker may OCR pages without words and ground again). */
  unsupported: string[];
}
