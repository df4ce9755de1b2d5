/**
 * libheif (libheif-js WASM, with libde265) loaded directly, with a faster inverse transform put in its function table.
 * Not to undo: the patch applies only to the libheif.wasm whose SHA-256 it knows, and only after each replacement
 * matches the original on test blocks; otherwise libheif runs as shipped (slower, same pixels). `libheifInfo()` says
 * which. Why and how: docs/decisions.md#heic-decoding-with-a-faster-inverse-transform.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { IDCT_WASM_BASE64 } from './heic-idct-wasm.js';

/** SHA-256 of libheif-js 1.23.2's libheif-wasm/libheif.wasm, the build whose table slots are listed below. */
export const PATCHABLE_LIBHEIF_WASM_SHA256 = 'e4aa8333fbe55ec7c6c776f735236f40bed9103188498f8131d4e52b73cdfee8';
/** Table slots of transform_{4x4,8x8,16x16,32x32}_add_8_fallback in that build (found in its elem segment). */
const IDCT_SLOTS = [
  [4, 1999],
  [8, 2000],
  [16, 2001],
  [32, 2002],
] as const;
/** The replacement's stack (the 32x32 intermediate is 2 KiB), allocated once in libheif's heap. */
const IDCT_STACK_BYTES = 16 * 1024;

/** An embind pointer wrapper (heif_context*, heif_image_handle*, heif_image*). */
type Pointer = object;
interface EnumValue {
  value: number;
}
interface HeifError {
  code: EnumValue;
  message: string;
}
interface HeifChannel {
  id: EnumValue;
  stride: number;
  width: number;
  height: number;
  /** A view of the WASM heap (stride × the image's height bytes). */
  data: Uint8Array;
}
interface HeifDecoded {
  image: Pointer;
  channels: HeifChannel[];
}

/** The part of libheif-js's embind API used here. */
interface LibheifModule {
  heif_get_version(): string;
  heif_context_alloc(): Pointer | null;
  heif_context_free(context: Pointer): void;
  heif_context_read_from_memory(context: Pointer, data: Uint8Array): HeifError;
  heif_js_context_get_list_of_top_level_image_IDs(context: Pointer): number[] | HeifError;
  heif_js_context_get_image_handle(context: Pointer, id: number): Pointer | HeifError;
  heif_image_handle_get_width(handle: Pointer): number;
  heif_image_handle_get_height(handle: Pointer): number;
  heif_image_handle_has_alpha_channel(handle: Pointer): number | boolean;
  heif_image_handle_release(handle: Pointer): void;
  heif_js_decode_image2(handle: Pointer, colorspace: EnumValue, chroma: EnumValue): HeifDecoded | HeifError;
  heif_image_release(image: Pointer): void;
  heif_error_code: { heif_error_Ok: EnumValue };
  heif_colorspace: { heif_colorspace_RGB: EnumValue };
  heif_chroma: { heif_chroma_interleaved_RGB: EnumValue; heif_chroma_interleaved_RGBA: EnumValue };
  heif_channel: { heif_channel_interleaved: EnumValue };
  _malloc(bytes: number): number;
  _free(pointer: number): void;
}
type LibheifFactory = (options: {
  wasmBinary: Uint8Array;
  instantiateWasm(imports: WebAssembly.Imports, done: (instance: WebAssembly.Instance) => unknown): unknown;
}) => LibheifModule;

export interface LibheifInfo {
  version: string;
  /** `simd`: the partial-butterfly inverse transform is in place; `reference`: libde265's own (see `reason`). */
  idct: 'simd' | 'reference';
  reason?: string;
}

export interface Libheif {
  module: LibheifModule;
  info: LibheifInfo;
}

let shared: Libheif | undefined;

/** The process's libheif, loaded (and patched) on first use. Throws when libheif-js cannot be loaded. */
export function libheif(): Libheif {
  shared ??= loadLibheif();
  return shared;
}

/** Which libheif is in use (loads it). */
export function libheifInfo(): LibheifInfo {
  return libheif().info;
}

/** libheif-js's files, resolved from heic-convert (the declared dependency) through heic-decode, wherever npm put them. */
function libheifFiles(): { factory: string; wasm: string } {
  const fromHere = createRequire(import.meta.url);
  const fromConvert = createRequire(fromHere.resolve('heic-convert'));
  const fromDecode = createRequire(fromConvert.resolve('heic-decode'));
  const factory = fromDecode.resolve('libheif-js/libheif-wasm/libheif.js');
  return { factory, wasm: path.join(path.dirname(factory), 'libheif.wasm') };
}

/** A new libheif instance; `patch: false` keeps libde265's reference transform (tests compare the two). */
export function loadLibheif(options: { patch?: boolean } = {}): Libheif {
  const files = libheifFiles();
  const wasmBinary = new Uint8Array(readFileSync(files.wasm));
  const factory = createRequire(import.meta.url)(files.factory) as LibheifFactory;
  let instance: WebAssembly.Instance | undefined;
  const module = factory({
    wasmBinary,
    instantiateWasm(imports, done) {
      instance = new WebAssembly.Instance(new WebAssembly.Module(wasmBinary), imports);
      return done(instance);
    },
  });
  const version = module.heif_get_version();
  if (options.patch === false) return { module, info: { version, idct: 'reference', reason: 'not requested' } };
  const sha256 = createHash('sha256').update(wasmBinary).digest('hex');
  if (sha256 !== PATCHABLE_LIBHEIF_WASM_SHA256) {
    return {
      module,
      info: { version, idct: 'reference', reason: `libheif.wasm ${sha256.slice(0, 12)} is not 1.23.2's` },
    };
  }
  if (instance === undefined) return { module, info: { version, idct: 'reference', reason: 'no WASM instance' } };
  const reason = patchIdct(module, instance);
  return { module, info: reason === undefined ? { version, idct: 'simd' } : { version, idct: 'reference', reason } };
}

/** `transform_NxN_add_8(dst, coeffs, stride)`: adds the inverse transform of N×N int16 coefficients to 8-bit pixels. */
type Transform = (dst: number, coeffs: number, stride: number) => void;

/** Puts the SIMD transform in libheif's table; returns why not when it does not. */
function patchIdct(module: LibheifModule, instance: WebAssembly.Instance): string | undefined {
  const exported = Object.values(instance.exports);
  const memory = exported.find((e): e is WebAssembly.Memory => e instanceof WebAssembly.Memory);
  const table = exported.find((e): e is WebAssembly.Table => e instanceof WebAssembly.Table);
  if (memory === undefined || table === undefined) return 'libheif exports no memory or table';
  let idct: WebAssembly.Exports;
  try {
    const compiled = new WebAssembly.Module(Buffer.from(IDCT_WASM_BASE64, 'base64'));
    idct = new WebAssembly.Instance(compiled, { env: { memory } }).exports;
  } catch (error) {
    return `the SIMD transform cannot be instantiated (${error instanceof Error ? error.message : String(error)})`;
  }
  const stackPointer = idct.__stack_pointer;
  if (!(stackPointer instanceof WebAssembly.Global)) return 'the SIMD transform exports no stack pointer';
  const stack = module._malloc(IDCT_STACK_BYTES);
  if (stack === 0) return 'no memory for the SIMD transform';
  stackPointer.value = (stack + IDCT_STACK_BYTES) & ~15;
  const replacements: [number, Transform][] = [];
  for (const [size, slot] of IDCT_SLOTS) {
    const original: unknown = table.get(slot);
    const replacement = idct[`add${size}`];
    if (typeof original !== 'function' || original.length !== 3 || typeof replacement !== 'function') {
      return `table slot ${slot} is not a ${size}x${size} transform`;
    }
    const replace = replacement as Transform;
    const mismatch = selfTest(module, memory, size, original as Transform, replace);
    if (mismatch !== undefined) return mismatch;
    replacements.push([slot, replace]);
  }
  for (const [slot, replacement] of replacements) table.set(slot, replacement);
  return undefined;
}

/**
 * Runs libheif's transform and the replacement on the same blocks (dense random coefficients over the whole int16
 * range, sparse ones, DC only) over the same predictions; undefined when every output byte matches.
 */
function selfTest(
  module: LibheifModule,
  memory: WebAssembly.Memory,
  size: number,
  original: Transform,
  replacement: Transform,
): string | undefined {
  const stride = size + 5;
  const pixels = stride * size;
  const block = module._malloc(size * size * 2 + 2 * pixels + 16);
  if (block === 0) return 'no memory to test the SIMD transform';
  const coeffs = (block + 15) & ~15;
  const a = coeffs + size * size * 2;
  const b = a + pixels;
  let seed = 0x9e3779b9 ^ size;
  const random = (): number => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return seed >>> 0;
  };
  try {
    for (const kind of ['dense', 'small', 'sparse', 'dc'] as const) {
      // Views after every call: a call may grow the memory, which detaches the previous buffer.
      const c = new Int16Array(memory.buffer, coeffs, size * size);
      for (let i = 0; i < c.length; i++) {
        const r = random();
        c[i] =
          kind === 'dense'
            ? (r & 0xffff) - 0x8000
            : kind === 'small'
              ? (r % 401) - 200
              : kind === 'sparse'
                ? r % 7 === 0
                  ? (r % 2001) - 1000
                  : 0
                : i === 0
                  ? (r % 4001) - 2000
                  : 0;
      }
      const prediction = new Uint8Array(memory.buffer, a, pixels);
      for (let i = 0; i < pixels; i++) prediction[i] = random() & 0xff;
      new Uint8Array(memory.buffer, b, pixels).set(prediction);
      original(a, coeffs, stride);
      replacement(b, coeffs, stride);
      const x = new Uint8Array(memory.buffer, a, pixels);
      const y = new Uint8Array(memory.buffer, b, pixels);
      for (let i = 0; i < pixels; i++) {
        if (x[i] !== y[i]) return `the SIMD ${size}x${size} transform differs from libde265's (${kind} block)`;
      }
    }
    return undefined;
  } finally {
    module._free(block);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Reading a file
// ---------------------------------------------------------------------------------------------------------------

/** Major brands heic-decode accepted (HEIF image and sequence brands); anything else is not a HEIC here. */
const HEIF_BRANDS: ReadonlySet<string> = new Set(['mif1', 'msf1', 'heic', 'heix', 'hevc', 'hevx']);

/** Decoded pixels: packed rows, RGB, or RGBA when the image has an alpha channel. */
export interface HeifPixels {
  data: Buffer;
  width: number;
  height: number;
  channels: 3 | 4;
}

/** A parsed HEIF file: the image's dimensions are known, nothing is decoded yet. Dispose of it when done. */
export interface HeifFile {
  width: number;
  height: number;
  hasAlpha: boolean;
  /** Decodes the image (synchronous WASM work), oriented as the container says. Does not dispose. */
  decode(): HeifPixels;
  dispose(): void;
}

/**
 * Parses a HEIF container and takes its first top-level image (the primary one in camera files), as heic-decode did.
 * Throws an Error saying why when the bytes are not a readable HEIF image.
 */
export function openHeif(bytes: Uint8Array, lib: Libheif = libheif()): HeifFile {
  const major = String.fromCharCode(...bytes.subarray(8, 12))
    .replace('\0', ' ')
    .trim();
  if (!HEIF_BRANDS.has(major)) throw new TypeError('input buffer is not a HEIC image');
  const lh = lib.module;
  const context = lh.heif_context_alloc();
  if (context === null) throw new Error('could not create a HEIF context');
  let handle: Pointer | undefined;
  try {
    const read = lh.heif_context_read_from_memory(context, bytes);
    if (read.code !== lh.heif_error_code.heif_error_Ok)
      throw new Error(read.message || 'could not parse the HEIF file');
    const ids = lh.heif_js_context_get_list_of_top_level_image_IDs(context);
    if (!Array.isArray(ids)) throw new Error(ids.message || 'could not list the HEIF images');
    for (const id of ids) {
      const found = lh.heif_js_context_get_image_handle(context, id);
      if (!('code' in found)) {
        handle = found;
        break;
      }
    }
    if (handle === undefined) throw new Error('HEIF image not found');
  } catch (error) {
    lh.heif_context_free(context);
    throw error;
  }
  const image = handle;
  let disposed = false;
  const hasAlpha = Boolean(lh.heif_image_handle_has_alpha_channel(image));
  return {
    width: lh.heif_image_handle_get_width(image),
    height: lh.heif_image_handle_get_height(image),
    hasAlpha,
    decode(): HeifPixels {
      if (disposed) throw new Error('the HEIF file is disposed');
      const chroma = hasAlpha
        ? lh.heif_chroma.heif_chroma_interleaved_RGBA
        : lh.heif_chroma.heif_chroma_interleaved_RGB;
      const decoded = lh.heif_js_decode_image2(image, lh.heif_colorspace.heif_colorspace_RGB, chroma);
      if (!decoded || 'code' in decoded) throw new Error(decoded?.message || 'HEIF processing error');
      try {
        const plane = decoded.channels.find((c) => c.id === lh.heif_channel.heif_channel_interleaved);
        if (plane === undefined) throw new Error('libheif returned no interleaved plane');
        const channels = hasAlpha ? 4 : 3;
        const { width, height, stride } = plane;
        const row = width * channels;
        if (width < 1 || height < 1 || stride < row || plane.data.length < stride * (height - 1) + row) {
          throw new Error(`libheif returned a ${width} x ${height} plane of ${plane.data.length} bytes`);
        }
        // One copy out of the WASM heap, before anything else runs in it.
        const data = Buffer.allocUnsafe(row * height);
        if (stride === row) data.set(plane.data.subarray(0, row * height));
        else for (let y = 0; y < height; y++) data.set(plane.data.subarray(y * stride, y * stride + row), y * row);
        return { data, width, height, channels };
      } finally {
        lh.heif_image_release(decoded.image);
      }
    },
    dispose(): void {
      if (disposed) return;
      disposed = true;
      lh.heif_image_handle_release(image);
      lh.heif_context_free(context);
    },
  };
}
