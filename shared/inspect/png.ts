/** PNG: dimensions from IHDR, completeness from the IEND chunk that must close the file. */
import { crc32 } from 'node:zlib';
import { CorruptFileError } from '../errors.js';
import { type ByteSource, type Dimensions, fourcc, u32 } from './source.js';

// IEND is always empty, so its 12 bytes (length 0, type, CRC of the type) are the same in every PNG.
const IEND = [0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82];
const SIGNATURE_AND_IHDR = 8 + 8 + 13 + 4;
// The PNG spec caps dimensions at 2^31 - 1 so they fit signed 32-bit integers in decoders.
const MAX_DIMENSION = 0x7fffffff;

/** Reads a PNG's dimensions (checking the IHDR CRC) and that it ends with IEND; throws CorruptFileError otherwise. */
export async function inspectPng(src: ByteSource): Promise<Dimensions> {
  if (src.size < SIGNATURE_AND_IHDR + IEND.length) {
    throw new CorruptFileError('truncated', 'PNG is too short to hold its header and end chunk');
  }
  const head = await src.readExact(0, SIGNATURE_AND_IHDR);
  if (u32(head, 8) !== 13 || fourcc(head, 12) !== 'IHDR') {
    throw new CorruptFileError('unreadable', 'PNG does not start with an IHDR chunk');
  }
  // The CRC covers the chunk type and data; a mismatch means the header bytes themselves are damaged.
  if (crc32(head.subarray(12, 29)) !== u32(head, 29)) {
    throw new CorruptFileError('unreadable', 'PNG header checksum does not match');
  }
  const width = u32(head, 16);
  const height = u32(head, 20);
  if (width > MAX_DIMENSION || height > MAX_DIMENSION) {
    throw new CorruptFileError('unreadable', `PNG declares impossible dimensions ${width}x${height}`);
  }
  const tail = await src.readExact(src.size - IEND.length, IEND.length);
  if (!IEND.every((byte, i) => tail[i] === byte)) {
    throw new CorruptFileError('truncated', 'PNG does not end with an IEND chunk (the upload is incomplete)');
  }
  return { width, height };
}
