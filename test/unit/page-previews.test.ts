/**
 * The worker's page images of a PDF run (shared/worker/page-previews.ts): which pages it renders and stores, under
 * which keys, bounded in pages and by the deadline, never failing; and that a stored image shows the words where the
 * text layer's boxes say they are (so a field's box drawn on it sits on its word). S3 is mocked at the client
 * (aws-sdk-client-mock); the rendering is real (mupdf, sharp).
 */
import { PutObjectCommand, type PutObjectCommandInput, S3Client } from '@aws-sdk/client-s3';
import { jest } from '@jest/globals';
import { mockClient } from 'aws-sdk-client-mock';
import sharp from 'sharp';
import type { BBox, Fields } from '../../shared/fields/types.js';
import { pdfWords } from '../../shared/media/index.js';
import {
  PREVIEW_LONG_SIDE,
  PREVIEW_MAX_PAGES,
  pagesWithBoxes,
  storePagePreviews,
} from '../../shared/worker/page-previews.js';
import { bucketName, fixture } from '../support/aws.js';

const s3 = mockClient(S3Client);
beforeEach(() => {
  s3.reset();
  s3.on(PutObjectCommand).resolves({});
});

const later = (ms = 60_000) => Date.now() + ms;
const pdfRun = (pages: number) => ({
  jobId: 'run_1',
  tenantId: 'tenant-a',
  file: { kind: 'pdf' as const, pages },
});
const puts = (): PutObjectCommandInput[] => s3.commandCalls(PutObjectCommand).map((call) => call.args[0].input);

describe('storePagePreviews', () => {
  test('stores each page asked once, as a JPEG under previews/{tenant}/{job}/page-{n}.jpg, with its size', async () => {
    const bytes = fixture('text.pdf');
    // Repeats, out-of-range pages and non-pages are ignored; the answer is ascending.
    const stored = await storePagePreviews({ run: pdfRun(2), bytes, pages: [2, 1, 2, 0, 3, 1.5], deadlineMs: later() });
    expect(stored).toEqual([1, 2]);
    const inputs = puts();
    expect(inputs.map((input) => input.Key)).toEqual([
      'previews/tenant-a/run_1/page-1.jpg',
      'previews/tenant-a/run_1/page-2.jpg',
    ]);
    for (const input of inputs) {
      expect(input.Bucket).toBe(bucketName());
      expect(input.ContentType).toBe('image/jpeg');
      const body = input.Body as Uint8Array;
      const meta = await sharp(body).metadata();
      expect(meta.format).toBe('jpeg');
      expect(Math.max(meta.width ?? 0, meta.height ?? 0)).toBe(PREVIEW_LONG_SIDE);
      expect(input.Metadata).toEqual({ width: String(meta.width), height: String(meta.height) });
    }
  });

  test(`renders at most ${PREVIEW_MAX_PAGES} pages, the lowest`, async () => {
    const bytes = fixture('twenty-pages.pdf');
    const asked = Array.from({ length: 20 }, (_, i) => 20 - i);
    const stored = await storePagePreviews({ run: pdfRun(20), bytes, pages: asked, deadlineMs: later() });
    expect(stored).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(puts().map((input) => input.Key)).toEqual(stored.map((n) => `previews/tenant-a/run_1/page-${n}.jpg`));
  });

  test('stops at the deadline with the pages stored until then', async () => {
    const bytes = fixture('twenty-pages.pdf');
    const deadlineMs = later();
    // The deadline passes while page 2 is being stored: page 3 is never started.
    let calls = 0;
    s3.on(PutObjectCommand).callsFake(() => {
      calls += 1;
      if (calls === 2) jest.spyOn(Date, 'now').mockReturnValue(deadlineMs);
      return {};
    });
    try {
      const stored = await storePagePreviews({ run: pdfRun(20), bytes, pages: [1, 2, 3, 4], deadlineMs });
      expect(stored).toEqual([1, 2]);
      expect(puts()).toHaveLength(2);
    } finally {
      jest.restoreAllMocks();
    }
    // A deadline already past: nothing is rendered or stored.
    s3.resetHistory();
    expect(await storePagePreviews({ run: pdfRun(20), bytes, pages: [1], deadlineMs: Date.now() - 1 })).toEqual([]);
    expect(puts()).toHaveLength(0);
  });

  test('never throws: a storage failure ends it with the pages stored, an unreadable file stores none', async () => {
    const bytes = fixture('text.pdf');
    s3.on(PutObjectCommand)
      .resolvesOnce({})
      .rejects(Object.assign(new Error('Access Denied'), { name: 'AccessDenied' }));
    expect(await storePagePreviews({ run: pdfRun(2), bytes, pages: [1, 2], deadlineMs: later() })).toEqual([1]);

    s3.reset();
    const unreadable = { 'encrypted.pdf': fixture('encrypted.pdf'), garbage: new TextEncoder().encode('%PDF-1.7 no') };
    for (const [name, bytes] of Object.entries(unreadable)) {
      const stored = await storePagePreviews({ run: pdfRun(1), bytes, pages: [1], deadlineMs: later() });
      expect([name, stored]).toEqual([name, []]);
    }
    expect(puts()).toHaveLength(0);
  });

  test('an image run gets no page images', async () => {
    const run = { jobId: 'run_1', tenantId: 'tenant-a', file: { kind: 'image' as const, pages: 1 } };
    expect(await storePagePreviews({ run, bytes: fixture('receipt.png'), pages: [1], deadlineMs: later() })).toEqual(
      [],
    );
    expect(puts()).toHaveLength(0);
  });

  test("the page image shows each word where the text layer's box says it is", async () => {
    const bytes = fixture('invoice.pdf');
    await storePagePreviews({ run: pdfRun(1), bytes, pages: [1], deadlineMs: later() });
    const image = puts()[0]?.Body as Uint8Array;
    const { data, info } = await sharp(image).greyscale().raw().toBuffer({ resolveWithObject: true });
    /** The share of dark pixels inside a relative box of the image. */
    const ink = ([x0, y0, x1, y1]: BBox): number => {
      let dark = 0;
      let all = 0;
      for (let y = Math.floor(y0 * info.height); y < Math.ceil(y1 * info.height); y++) {
        for (let x = Math.floor(x0 * info.width); x < Math.ceil(x1 * info.width); x++) {
          all += 1;
          if ((data[y * info.width + x] ?? 255) < 128) dark += 1;
        }
      }
      return dark / Math.max(1, all);
    };
    const [page] = await pdfWords(bytes, { signal: new AbortController().signal, deadlineMs: later() });
    const words = page?.words ?? [];
    for (const text of ['INVOICE', 'INV-3001', '1,578.00']) {
      const word = words.find((w) => w.text === text);
      const box = word?.bbox as BBox;
      // Ink inside the word's box; none in a box of the same size just right of the page's text (blank paper).
      expect([word?.text, ink(box) > 0.05]).toEqual([word?.text, true]);
      const width = box[2] - box[0];
      expect([word?.text, ink([0.9, box[1], Math.min(1, 0.9 + width), box[3]])]).toEqual([word?.text, 0]);
    }
  });
});

describe('pagesWithBoxes', () => {
  test('the pages with a boxed field or item field, ascending and once; a box without a page is on page 1', () => {
    const box: BBox = [0.1, 0.1, 0.2, 0.12];
    const fields: Fields = {
      total: { confidence: 0.9, page: 3, bbox: box },
      date: { confidence: 0.9, page: 3, bbox: box },
      vendor: { confidence: 0.2, page: 2 },
      missing: { confidence: 0.1 },
      note: { confidence: 0.8, bbox: box },
      lines: {
        confidence: 0.7,
        items: [{ amount: { confidence: 0.7, page: 5, bbox: box }, text: { confidence: 0.6, page: 4 } }],
      },
    };
    expect(pagesWithBoxes(fields)).toEqual([1, 3, 5]);
    expect(pagesWithBoxes({})).toEqual([]);
  });
});
