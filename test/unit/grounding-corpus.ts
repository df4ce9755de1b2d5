/**
 * Word sets for the grounding tests (shared/fields), built from the fixture texts (test/fixtures/README.md): the
 * receipt as tesseract reads receipt.png (boxes and confidences from a real run of the local provider's OCR),
 * text.pdf's invoice as its text layer lays it out, and a café receipt in US notation with line items and a tip.
 * Not a test file: the calibration and unit tests import it.
 */
import type { BBox, EvidenceWord, PageWords } from '../../shared/fields/types.js';

/** tesseract.js (LSTM, eng) on test/fixtures/receipt.png, 800 x 834: [text, confidence %, x0, y0, x1, y1]. */
const RECEIPT_OCR: [string, number, number, number, number, number][] = [
  ['ACME', 96, 76, 80, 220, 118],
  ['HARDWARE', 96, 239, 81, 531, 117],
  ['12', 96, 78, 154, 106, 175],
  ['Main', 96, 118, 154, 177, 176],
  ['Street,', 96, 189, 153, 270, 179],
  ['Springfield', 96, 283, 153, 417, 181],
  ['Date:', 96, 78, 234, 153, 259],
  ['2026-11-02', 96, 165, 234, 333, 259],
  ['Invoice', 95, 78, 289, 179, 314],
  ['Number:', 93, 193, 289, 316, 314],
  ['INV-1042', 87, 330, 289, 466, 314],
  ['Hammer', 95, 78, 372, 202, 397],
  ['1', 95, 215, 372, 224, 396],
  ['x', 96, 241, 379, 255, 396],
  ['18.50', 96, 269, 372, 347, 397],
  ['Screws', 95, 77, 425, 183, 451],
  ['2', 96, 195, 426, 210, 450],
  ['x', 96, 222, 433, 237, 450],
  ['10.00', 96, 251, 426, 329, 451],
  ['Subtotal:', 95, 77, 508, 205, 534],
  ['38.50', 96, 217, 509, 297, 534],
  ['Tax:', 95, 76, 564, 138, 589],
  ['4.00', 96, 150, 564, 212, 589],
  ['Total:', 95, 76, 631, 174, 659],
  ['42.50', 96, 188, 631, 280, 659],
  ['Thank', 96, 76, 726, 167, 751],
  ['you', 96, 178, 732, 228, 757],
];

const round4 = (x: number): number => Math.round(x * 10_000) / 10_000;

export const receiptWords: PageWords[] = [
  {
    page: 1,
    source: 'tesseract',
    words: RECEIPT_OCR.map(([text, confidence, x0, y0, x1, y1]) => ({
      text,
      confidence: confidence / 100,
      bbox: [round4(x0 / 800), round4(y0 / 834), round4(x1 / 800), round4(y1 / 834)] as BBox,
    })),
  },
];

export interface Line {
  text: string;
  x: number;
  /** Baseline, points from the top. */
  y: number;
  size: number;
}

/**
 * The words of text lines as a PDF text layer boxes them: Helvetica's average advance (~0.52 em a character, a space
 * 0.28 em), ascent 0.72 em and descent 0.21 em, relative to the page. Approximate, which is all grounding needs.
 */
export function layout(
  page: number,
  width: number,
  height: number,
  lines: readonly Line[],
  confidence?: number,
): PageWords {
  const words: EvidenceWord[] = [];
  for (const line of lines) {
    let x = line.x;
    for (const text of line.text.split(' ')) {
      const w = text.length * 0.52 * line.size;
      const bbox: BBox = [
        round4(x / width),
        round4((line.y - 0.72 * line.size) / height),
        round4((x + w) / width),
        round4((line.y + 0.21 * line.size) / height),
      ];
      words.push(confidence === undefined ? { text, bbox } : { text, bbox, confidence });
      x += w + 0.28 * line.size;
    }
  }
  return { page, source: confidence === undefined ? 'text-layer' : 'tesseract', words };
}

/** text.pdf: a 2-page invoice (scripts/make-fixtures.ts draws the same lines). */
export const invoiceWords: PageWords[] = [
  layout(1, 612, 792, [
    { text: 'INVOICE', x: 72, y: 90, size: 28 },
    { text: 'Invoice Number: INV-2001', x: 72, y: 140, size: 16 },
    { text: 'Invoice Date: 2026-10-15', x: 72, y: 166, size: 16 },
    { text: 'Vendor: Globex Ltd', x: 72, y: 192, size: 16 },
    { text: 'Bill To: Initech Inc', x: 72, y: 218, size: 16 },
    { text: 'Consulting services, October 2026', x: 72, y: 270, size: 14 },
    { text: 'Total Due: 1250.00', x: 72, y: 320, size: 18 },
  ]),
  layout(2, 612, 792, [
    { text: 'Terms and Conditions', x: 72, y: 90, size: 20 },
    { text: 'Payment is due within thirty days of the invoice date.', x: 72, y: 130, size: 13 },
    { text: 'Late payments accrue interest of one percent per month.', x: 72, y: 154, size: 13 },
    { text: 'Goods remain the property of the vendor until paid in full.', x: 72, y: 178, size: 13 },
    { text: 'Please quote the invoice number with every payment.', x: 72, y: 202, size: 13 },
    { text: 'Questions about this invoice go to billing@globex.example.', x: 72, y: 226, size: 13 },
  ]),
];

/** A café receipt in US notation, photographed (OCR confidences in the 0.9s): multi-word merchant, month-name date. */
export const cafeWords: PageWords[] = [
  layout(
    1,
    300,
    500,
    [
      { text: 'Blue Bottle Coffee', x: 20, y: 40, size: 16 },
      { text: '300 Webster St, Oakland, CA 94607', x: 20, y: 60, size: 9 },
      { text: 'Nov 20, 2026 08:14', x: 20, y: 84, size: 10 },
      { text: 'Latte $5.25', x: 20, y: 120, size: 10 },
      { text: 'Croissant $4.50', x: 20, y: 136, size: 10 },
      { text: 'Cold Brew $5.50', x: 20, y: 152, size: 10 },
      { text: 'Subtotal $15.25', x: 20, y: 180, size: 10 },
      { text: 'Tax $1.37', x: 20, y: 196, size: 10 },
      { text: 'Tip $3.00', x: 20, y: 212, size: 10 },
      { text: 'Total $19.62', x: 20, y: 232, size: 12 },
      { text: 'VISA **** 4242 $19.62', x: 20, y: 256, size: 9 },
      { text: 'Thank you!', x: 20, y: 290, size: 10 },
    ],
    0.93,
  ),
];
