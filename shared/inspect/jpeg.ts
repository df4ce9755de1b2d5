/**
 * JPEG: dimensions from the frame header, completeness from the end marker. Only marker segment headers (and an XMP
 * packet, when there is one) are read; the entropy-coded image data is never touched.
 *
 * Motion photos (Pixel "Motion"/"Top Shot", Samsung "Motion photo") append a short MP4 after the JPEG's end marker
 * and say so in their XMP: `GCamera:MicroVideoOffset` (bytes from the video's start to the end of the file) or a
 * `Container:Directory` whose last item has the `MotionPhoto` semantic and a `Length`. The end marker must then sit
 * exactly before that trailer, so a cut-off upload is still caught.
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

const XMP_SIGNATURE = 'http://ns.adobe.com/xap/1.0/\0';
const APP1 = 0xe1;

/** Reads a JPEG's stored dimensions and checks it ends with EOI; throws CorruptFileError otherwise. */
export async function inspectJpeg(src: ByteSource): Promise<Dimensions> {
  const { dims, trailerBytes } = await readFrameHeader(src);
  await checkEndMarker(src, trailerBytes);
  return dims;
}

/** Bytes of a motion photo's video after the JPEG, from its XMP packet; 0 when the XMP announces none. */
export function motionPhotoTrailerBytes(xmp: string): number {
  const micro = /MicroVideoOffset\s*(?:=\s*"|>)\s*(\d+)/.exec(xmp);
  if (micro?.[1]) return Number(micro[1]);
  // Container:Item elements, in file order; the MotionPhoto one (the video) is the last and carries its Length.
  for (const item of xmp.match(/<Container:Item\b[^>]*>/g) ?? []) {
    if (/Item:Semantic\s*=\s*"MotionPhoto"/.test(item)) {
      const length = /Item:Length\s*=\s*"(\d+)"/.exec(item)?.[1];
      const padding = /Item:Padding\s*=\s*"(\d+)"/.exec(item)?.[1];
      return Number(length ?? 0) + Number(padding ?? 0);
    }
  }
  return 0;
}

async function readFrameHeader(src: ByteSource): Promise<{ dims: Dimensions; trailerBytes: number }> {
  let offset = 2; // after SOI
  let trailerBytes = 0;
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
        return { dims: { height: u16(sof, 1), width: u16(sof, 3) }, trailerBytes };
      }
      if (marker === APP1 && length > 2 + XMP_SIGNATURE.length) {
        const segment = await src.readExact(offset + 4, length - 2);
        const text = Buffer.from(segment.buffer, segment.byteOffset, segment.byteLength).toString('latin1');
        if (text.startsWith(XMP_SIGNATURE)) trailerBytes = motionPhotoTrailerBytes(text);
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

async function checkEndMarker(src: ByteSource, trailerBytes: number): Promise<void> {
  // A motion photo's JPEG ends where its video starts. Either place will do: an editor may strip the video and keep
  // the XMP (a trailer longer than the file is such a broken XMP too).
  if (trailerBytes > 0 && trailerBytes < src.size && (await endsWithEoi(src, src.size - trailerBytes))) return;
  if (await endsWithEoi(src, src.size)) return;
  throw new CorruptFileError('truncated', 'JPEG does not end with an end-of-image marker (the upload is incomplete)');
}

/** Whether the bytes before `end` are EOI, allowing a little zero padding. */
async function endsWithEoi(src: ByteSource, end: number): Promise<boolean> {
  const tailLength = Math.min(end, MAX_TRAILING_PADDING + 2);
  const tail = await src.read(end - tailLength, tailLength);
  let last = tail.length;
  while (last > 2 && tail[last - 1] === 0x00) last--;
  return last >= 2 && tail[last - 2] === 0xff && tail[last - 1] === 0xd9;
}
