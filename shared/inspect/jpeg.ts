/**
 * JPEG: dimensions from the frame header, completeness from the end marker. Only marker segment headers are read;
 * the entropy-coded image data is never touched.
 */
import { CorruptFileError } from '../errors.js';
import { type ByteSource, type Dimensions, PastEndError, u16 } from './source.js';

// Start-of-frame markers carry the dimensions. C4 (DHT), C8 (reserved, JPG) and CC (DAC) share the range but are not
// frame headers.
const isStartOfFrame = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;
// Markers without a length field: TEM and the restart markers.
const isStandalone = (m: number) => m === 0x01 || (m >= 0xd0 && m <= 0xd7);

const MAX_SEGMENTS = 4096;
// Some encoders (and some upload paths) pad files with a few zero bytes after EOI; tolerate that much.
const MAX_TRAILING_PADDING = 16;

/** Reads a JPEG's stored dimensions and checks it ends with EOI; throws CorruptFileError otherwise. */
export async function inspectJpeg(src: ByteSource): Promise<Dimensions> {
  const dims = await readFrameHeader(src);
  await checkEndMarker(src);
  return dims;
}

async function readFrameHeader(src: ByteSource): Promise<Dimensions> {
  let offset = 2; // after SOI
  try {
    for (let i = 0; i < MAX_SEGMENTS; i++) {
      const head = await src.readExact(offset, 4);
      if (head[0] !== 0xff) {
        throw new CorruptFileError('unreadable', `JPEG marker expected at byte ${offset}`);
      }
      const marker = head[1] ?? 0;
      // Any number of 0xFF fill bytes may precede a marker.
      if (marker === 0xff) {
        offset += 1;
        continue;
      }
      if (isStandalone(marker)) {
        offset += 2;
        continue;
      }
      if (marker === 0xd9 || marker === 0xda || marker === 0xd8) {
        // Image data (SOS) or the end (EOI) before any frame header: there is no image to size.
        throw new CorruptFileError('unreadable', 'JPEG has no frame header before its image data');
      }
      const length = u16(head, 2);
      if (length < 2) throw new CorruptFileError('unreadable', `JPEG segment at byte ${offset} has length ${length}`);
      if (isStartOfFrame(marker)) {
        const sof = await src.readExact(offset + 4, 5); // precision, height, width
        return { height: u16(sof, 1), width: u16(sof, 3) };
      }
      // Segments are at most 64 KiB (an EXIF APP1 usually is the big one); the block cache makes the hop cheap.
      offset += 2 + length;
    }
  } catch (error) {
    if (error instanceof PastEndError) {
      throw new CorruptFileError('truncated', 'JPEG ends before its frame header (the upload is incomplete)');
    }
    throw error;
  }
  throw new CorruptFileError('unreadable', `JPEG has more than ${MAX_SEGMENTS} segments before its frame header`);
}

async function checkEndMarker(src: ByteSource): Promise<void> {
  const tailLength = Math.min(src.size, MAX_TRAILING_PADDING + 2);
  const tail = await src.read(src.size - tailLength, tailLength);
  let end = tail.length;
  while (end > 2 && tail[end - 1] === 0x00) end--;
  if (end < 2 || tail[end - 2] !== 0xff || tail[end - 1] !== 0xd9) {
    throw new CorruptFileError('truncated', 'JPEG does not end with an end-of-image marker (the upload is incomplete)');
  }
}
