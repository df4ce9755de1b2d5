/**
 * Scoring answers against the truth (contract-v1.2 §1), pure and in one place for the API, the CLI, the bench and the
 * local engine's own measurements: compare one value by its field type (`compareValue`), one document's expected
 * values against an answer by a schema's fields (`scoreDocument`), and build the report of scored items
 * (`buildReport`, with `calibrate` for confidence against correctness).
 */
export { type Calibration, type CalibrationBin, type CalibrationPoint, calibrate } from './calibration.js';
export {
  type CompareType,
  type Comparison,
  compareLists,
  compareValue,
  type DocumentInput,
  type FieldScore,
  type Outcome,
  scoreDocument,
} from './compare.js';
export { buildReport, type FieldReport, type ProviderReport, type Report, type ScoredItem } from './report.js';
export { dateReadings, normaliseText, numberReadings, sameDay, sameNumber } from './values.js';
