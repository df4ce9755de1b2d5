/**
 * Builds the WebAssembly inverse transform that ../libheif.ts puts in place of libde265's reference one (build time
 * only: `apt-get install clang lld && npx tsx shared/media/heic-idct/build.ts`). Writes idct.c and ../heic-idct-wasm.ts.
 * Bit-exact with libde265 by construction and by test (test/unit/media.test.ts): docs/decisions.md#the-wasm-inverse-transform-build.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** The HEVC inverse transform matrix (ITU-T H.265 §8.6.4.2): row j, column k; N points use rows j·32/N. */
// biome-ignore format: the matrix reads as a matrix
const M32: readonly (readonly number[])[] = [
  [64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64],
  [90, 90, 88, 85, 82, 78, 73, 67, 61, 54, 46, 38, 31, 22, 13, 4, -4, -13, -22, -31, -38, -46, -54, -61, -67, -73, -78, -82, -85, -88, -90, -90],
  [90, 87, 80, 70, 57, 43, 25, 9, -9, -25, -43, -57, -70, -80, -87, -90, -90, -87, -80, -70, -57, -43, -25, -9, 9, 25, 43, 57, 70, 80, 87, 90],
  [90, 82, 67, 46, 22, -4, -31, -54, -73, -85, -90, -88, -78, -61, -38, -13, 13, 38, 61, 78, 88, 90, 85, 73, 54, 31, 4, -22, -46, -67, -82, -90],
  [89, 75, 50, 18, -18, -50, -75, -89, -89, -75, -50, -18, 18, 50, 75, 89, 89, 75, 50, 18, -18, -50, -75, -89, -89, -75, -50, -18, 18, 50, 75, 89],
  [88, 67, 31, -13, -54, -82, -90, -78, -46, -4, 38, 73, 90, 85, 61, 22, -22, -61, -85, -90, -73, -38, 4, 46, 78, 90, 82, 54, 13, -31, -67, -88],
  [87, 57, 9, -43, -80, -90, -70, -25, 25, 70, 90, 80, 43, -9, -57, -87, -87, -57, -9, 43, 80, 90, 70, 25, -25, -70, -90, -80, -43, 9, 57, 87],
  [85, 46, -13, -67, -90, -73, -22, 38, 82, 88, 54, -4, -61, -90, -78, -31, 31, 78, 90, 61, 4, -54, -88, -82, -38, 22, 73, 90, 67, 13, -46, -85],
  [83, 36, -36, -83, -83, -36, 36, 83, 83, 36, -36, -83, -83, -36, 36, 83, 83, 36, -36, -83, -83, -36, 36, 83, 83, 36, -36, -83, -83, -36, 36, 83],
  [82, 22, -54, -90, -61, 13, 78, 85, 31, -46, -90, -67, 4, 73, 88, 38, -38, -88, -73, -4, 67, 90, 46, -31, -85, -78, -13, 61, 90, 54, -22, -82],
  [80, 9, -70, -87, -25, 57, 90, 43, -43, -90, -57, 25, 87, 70, -9, -80, -80, -9, 70, 87, 25, -57, -90, -43, 43, 90, 57, -25, -87, -70, 9, 80],
  [78, -4, -82, -73, 13, 85, 67, -22, -88, -61, 31, 90, 54, -38, -90, -46, 46, 90, 38, -54, -90, -31, 61, 88, 22, -67, -85, -13, 73, 82, 4, -78],
  [75, -18, -89, -50, 50, 89, 18, -75, -75, 18, 89, 50, -50, -89, -18, 75, 75, -18, -89, -50, 50, 89, 18, -75, -75, 18, 89, 50, -50, -89, -18, 75],
  [73, -31, -90, -22, 78, 67, -38, -90, -13, 82, 61, -46, -88, -4, 85, 54, -54, -85, 4, 88, 46, -61, -82, 13, 90, 38, -67, -78, 22, 90, 31, -73],
  [70, -43, -87, 9, 90, 25, -80, -57, 57, 80, -25, -90, -9, 87, 43, -70, -70, 43, 87, -9, -90, -25, 80, 57, -57, -80, 25, 90, 9, -87, -43, 70],
  [67, -54, -78, 38, 85, -22, -90, 4, 90, 13, -88, -31, 82, 46, -73, -61, 61, 73, -46, -82, 31, 88, -13, -90, -4, 90, 22, -85, -38, 78, 54, -67],
  [64, -64, -64, 64, 64, -64, -64, 64, 64, -64, -64, 64, 64, -64, -64, 64, 64, -64, -64, 64, 64, -64, -64, 64, 64, -64, -64, 64, 64, -64, -64, 64],
  [61, -73, -46, 82, 31, -88, -13, 90, -4, -90, 22, 85, -38, -78, 54, 67, -67, -54, 78, 38, -85, -22, 90, 4, -90, 13, 88, -31, -82, 46, 73, -61],
  [57, -80, -25, 90, -9, -87, 43, 70, -70, -43, 87, 9, -90, 25, 80, -57, -57, 80, 25, -90, 9, 87, -43, -70, 70, 43, -87, -9, 90, -25, -80, 57],
  [54, -85, -4, 88, -46, -61, 82, 13, -90, 38, 67, -78, -22, 90, -31, -73, 73, 31, -90, 22, 78, -67, -38, 90, -13, -82, 61, 46, -88, 4, 85, -54],
  [50, -89, 18, 75, -75, -18, 89, -50, -50, 89, -18, -75, 75, 18, -89, 50, 50, -89, 18, 75, -75, -18, 89, -50, -50, 89, -18, -75, 75, 18, -89, 50],
  [46, -90, 38, 54, -90, 31, 61, -88, 22, 67, -85, 13, 73, -82, 4, 78, -78, -4, 82, -73, -13, 85, -67, -22, 88, -61, -31, 90, -54, -38, 90, -46],
  [43, -90, 57, 25, -87, 70, 9, -80, 80, -9, -70, 87, -25, -57, 90, -43, -43, 90, -57, -25, 87, -70, -9, 80, -80, 9, 70, -87, 25, 57, -90, 43],
  [38, -88, 73, -4, -67, 90, -46, -31, 85, -78, 13, 61, -90, 54, 22, -82, 82, -22, -54, 90, -61, -13, 78, -85, 31, 46, -90, 67, 4, -73, 88, -38],
  [36, -83, 83, -36, -36, 83, -83, 36, 36, -83, 83, -36, -36, 83, -83, 36, 36, -83, 83, -36, -36, 83, -83, 36, 36, -83, 83, -36, -36, 83, -83, 36],
  [31, -78, 90, -61, 4, 54, -88, 82, -38, -22, 73, -90, 67, -13, -46, 85, -85, 46, 13, -67, 90, -73, 22, 38, -82, 88, -54, -4, 61, -90, 78, -31],
  [25, -70, 90, -80, 43, 9, -57, 87, -87, 57, -9, -43, 80, -90, 70, -25, -25, 70, -90, 80, -43, -9, 57, -87, 87, -57, 9, 43, -80, 90, -70, 25],
  [22, -61, 85, -90, 73, -38, -4, 46, -78, 90, -82, 54, -13, -31, 67, -88, 88, -67, 31, 13, -54, 82, -90, 78, -46, 4, 38, -73, 90, -85, 61, -22],
  [18, -50, 75, -89, 89, -75, 50, -18, -18, 50, -75, 89, -89, 75, -50, 18, 18, -50, 75, -89, 89, -75, 50, -18, -18, 50, -75, 89, -89, 75, -50, 18],
  [13, -38, 61, -78, 88, -90, 85, -73, 54, -31, 4, 22, -46, 67, -82, 90, -90, 82, -67, 46, -22, -4, 31, -54, 73, -85, 90, -88, 78, -61, 38, -13],
  [9, -25, 43, -57, 70, -80, 87, -90, 90, -87, 80, -70, 57, -43, 25, -9, -9, 25, -43, 57, -70, 80, -87, 90, -90, 87, -80, 70, -57, 43, -25, 9],
  [4, -13, 22, -31, 38, -46, 54, -61, 67, -73, 78, -82, 85, -88, 90, -90, 90, -90, 88, -85, 82, -78, 73, -67, 61, -54, 46, -38, 31, -22, 13, -4],
];
const SIZES = [4, 8, 16, 32] as const;

/** Row j, column k of the N-point matrix. */
function m(n: number, j: number, k: number): number {
  const value = M32[j * (32 / n)]?.[k];
  if (value === undefined) throw new Error(`no matrix entry ${n}/${j}/${k}`);
  return value;
}

/** The C source: one `invN` per size (1-D, 16-bit inputs as scalars, N/4 vectors out) and one exported `addN`. */
export function generateC(): string {
  const out: string[] = [];
  const w = (line: string) => out.push(line);
  w('// GENERATED by build.ts (npx tsx shared/media/heic-idct/build.ts); do not edit.');
  w('// HEVC 8-bit inverse DCT + add to the prediction, bit-exact with libde265 transform_idct_add<uint8_t>.');
  w('#include <wasm_simd128.h>');
  w('typedef short i16;');
  w('typedef int i32;');
  w('typedef unsigned char u8;');
  w('#define INL static inline __attribute__((always_inline))');
  w(
    '// (a, b) in every pair of 16-bit lanes: dotted with (Ma[k], Mb[k], ...) it gives a*Ma[k] + b*Mb[k] per 32-bit lane.',
  );
  w('INL v128_t pr(i32 a, i32 b) { return wasm_i32x4_splat((a & 0xffff) | (b << 16)); }');
  w('INL v128_t rev(v128_t v) { return wasm_i32x4_shuffle(v, v, 3, 2, 1, 0); }');
  w('#define DOT(p, a0, b0, a1, b1, a2, b2, a3, b3) \\');
  w('  wasm_i32x4_dot_i16x8(p, wasm_i16x8_const(a0, b0, a1, b1, a2, b2, a3, b3))');
  w('');
  for (const n of SIZES) {
    const params = Array.from({ length: n }, (_, j) => `i32 x${j}`).join(', ');
    w(`// ${n}-point inverse: o[v] holds outputs 4v..4v+3.`);
    w(`INL void inv${n}(${params}, v128_t* o) {`);
    if (n === 4) {
      const k = (a: number, b: number) => [0, 1, 2, 3].flatMap((i) => [m(4, a, i), m(4, b, i)]).join(', ');
      w(`  o[0] = wasm_i32x4_add(DOT(pr(x0, x2), ${k(0, 2)}), DOT(pr(x1, x3), ${k(1, 3)}));`);
    } else {
      const h = n / 2;
      // Even inputs: the N/2-point inverse. Odd inputs: O[k] = sum over odd j of M[j][k] * x[j], k < N/2.
      // Outputs: out[k] = E[k] + O[k], out[N-1-k] = E[k] - O[k].
      w(`  v128_t e[${h / 4}];`);
      w(`  inv${h}(${Array.from({ length: h }, (_, i) => `x${2 * i}`).join(', ')}, e);`);
      for (let v = 0; v < h / 4; v++) {
        const terms: string[] = [];
        for (let i = 0; i < h; i += 2) {
          const a = 2 * i + 1;
          const b = 2 * i + 3;
          const ks = [0, 1, 2, 3].flatMap((l) => [m(n, a, 4 * v + l), m(n, b, 4 * v + l)]).join(', ');
          terms.push(`DOT(pr(x${a}, x${b}), ${ks})`);
        }
        w(`  v128_t o${v} = ${terms[0]};`);
        for (const term of terms.slice(1)) w(`  o${v} = wasm_i32x4_add(o${v}, ${term});`);
        w(`  o[${v}] = wasm_i32x4_add(e[${v}], o${v});`);
        w(`  o[${n / 4 - 1 - v}] = rev(wasm_i32x4_sub(e[${v}], o${v}));`);
      }
    }
    w('}');
    w('');
  }
  for (const n of SIZES) {
    const vectors = n / 4;
    const inputs = (base: string) => Array.from({ length: n }, (_, j) => `${base}[${j * n}]`).join(', ');
    w(`// dst[y*stride + x] += residual, for the ${n}x${n} coefficients (row-major, ${n} per row) at coeffs.`);
    w(`__attribute__((export_name("add${n}"))) void add${n}(u8* dst, const i16* coeffs, int stride) {`);
    w(`  i16 tmp[${n * n}] __attribute__((aligned(16)));`);
    w('  // Only the DC coefficient (or none): every residual is the same.');
    w('  v128_t ac = wasm_v128_and(wasm_v128_load(coeffs), wasm_i16x8_const(0, -1, -1, -1, -1, -1, -1, -1));');
    w(`  for (int i = 8; i < ${n * n}; i += 8) ac = wasm_v128_or(ac, wasm_v128_load(coeffs + i));`);
    w('  if (!wasm_v128_any_true(ac)) {');
    w('    i32 r = ((((coeffs[0] * 64 + 64) >> 7) * 64) + 2048) >> 12;');
    w('    if (r == 0) return;');
    w('    v128_t rv = wasm_i16x8_splat(r);');
    w(`    for (int y = 0; y < ${n}; y++) {`);
    w('      u8* d = dst + y * stride;');
    if (n === 4) {
      w('      v128_t p = wasm_i16x8_add(wasm_u16x8_extend_low_u8x16(wasm_v128_load32_zero(d)), rv);');
      w('      wasm_v128_store32_lane(d, wasm_u8x16_narrow_i16x8(p, p), 0);');
    } else {
      w(`      for (int i = 0; i < ${n}; i += 8) {`);
      w('        v128_t p = wasm_i16x8_add(wasm_u16x8_load8x8(d + i), rv);');
      w('        wasm_v128_store64_lane(d + i, wasm_u8x16_narrow_i16x8(p, p), 0);');
      w('      }');
    }
    w('    }');
    w('    return;');
    w('  }');
    w('  const v128_t rnd1 = wasm_i32x4_splat(64), rnd2 = wasm_i32x4_splat(2048);');
    w('  // First pass, column c: tmp[c*N + i] = clip16((sum + 64) >> 7), the transposed intermediate.');
    w(`  for (int c = 0; c < ${n}; c++) {`);
    w('    const i16* s = coeffs + c;');
    w(`    v128_t o[${vectors}];`);
    w(`    inv${n}(${inputs('s')}, o);`);
    w(`    i16* t = tmp + c * ${n};`);
    if (vectors === 1) {
      w('    v128_t a = wasm_i32x4_shr(wasm_i32x4_add(o[0], rnd1), 7);');
      w('    wasm_v128_store64_lane(t, wasm_i16x8_narrow_i32x4(a, a), 0);');
    } else {
      for (let v = 0; v < vectors; v += 2) {
        w('    {');
        w(`      v128_t a = wasm_i32x4_shr(wasm_i32x4_add(o[${v}], rnd1), 7);`);
        w(`      v128_t b = wasm_i32x4_shr(wasm_i32x4_add(o[${v + 1}], rnd1), 7);`);
        w(`      wasm_v128_store(t + ${4 * v}, wasm_i16x8_narrow_i32x4(a, b));`);
        w('    }');
      }
    }
    w('  }');
    w('  // Second pass, row y (its inputs are tmp[j*N + y]): dst += (sum + 2048) >> 12, clipped to 0..255.');
    w(`  for (int y = 0; y < ${n}; y++) {`);
    w('    const i16* s = tmp + y;');
    w(`    v128_t o[${vectors}];`);
    w(`    inv${n}(${inputs('s')}, o);`);
    w('    u8* d = dst + y * stride;');
    if (vectors === 1) {
      w('    v128_t a = wasm_i32x4_shr(wasm_i32x4_add(o[0], rnd2), 12);');
      w(
        '    v128_t p = wasm_i16x8_add_sat(wasm_i16x8_narrow_i32x4(a, a), wasm_u16x8_extend_low_u8x16(wasm_v128_load32_zero(d)));',
      );
      w('    wasm_v128_store32_lane(d, wasm_u8x16_narrow_i16x8(p, p), 0);');
    } else {
      for (let v = 0; v < vectors; v += 2) {
        w('    {');
        w(`      v128_t a = wasm_i32x4_shr(wasm_i32x4_add(o[${v}], rnd2), 12);`);
        w(`      v128_t b = wasm_i32x4_shr(wasm_i32x4_add(o[${v + 1}], rnd2), 12);`);
        w(`      v128_t p = wasm_i16x8_add_sat(wasm_i16x8_narrow_i32x4(a, b), wasm_u16x8_load8x8(d + ${4 * v}));`);
        w(`      wasm_v128_store64_lane(d + ${4 * v}, wasm_u8x16_narrow_i16x8(p, p), 0);`);
        w('    }');
      }
    }
    w('  }');
    w('}');
    w('');
  }
  return out.join('\n');
}

/** Section ids of a WebAssembly binary (1 type, 2 import, 7 export, 11 data, ...). */
function sectionIds(wasm: Uint8Array): number[] {
  const ids: number[] = [];
  let p = 8;
  while (p < wasm.length) {
    const id = wasm[p++] as number;
    let size = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = wasm[p++] as number;
      size |= (byte & 0x7f) << shift;
      shift += 7;
    } while (byte & 0x80);
    ids.push(id);
    p += size;
  }
  return ids;
}

function build(): void {
  const source = generateC();
  writeFileSync(path.join(HERE, 'idct.c'), source);
  const dir = mkdtempSync(path.join(tmpdir(), 'heic-idct-'));
  try {
    const wasmPath = path.join(dir, 'idct.wasm');
    // biome-ignore format: one flag per line reads better
    execFileSync('clang', [
      '--target=wasm32', '-O3', '-msimd128', '-mmutable-globals', '-nostdlib', '-fno-builtin',
      '-Wl,--no-entry', '-Wl,--import-memory', '-Wl,--export=__stack_pointer', '-Wl,--strip-debug',
      '-o', wasmPath, path.join(HERE, 'idct.c'),
    ], { stdio: 'inherit' });
    const wasm = new Uint8Array(readFileSync(wasmPath));
    // No data segment (11) or data count (12): instantiating must not write to the memory it shares.
    const sections = sectionIds(wasm);
    if (sections.includes(11) || sections.includes(12)) throw new Error('the module has a data segment');
    const module = new WebAssembly.Module(wasm);
    const imports = WebAssembly.Module.imports(module).map((i) => `${i.module}.${i.name}:${i.kind}`);
    if (imports.join() !== 'env.memory:memory') throw new Error(`unexpected imports: ${imports.join()}`);
    const exports = WebAssembly.Module.exports(module)
      .map((e) => `${e.name}:${e.kind}`)
      .sort();
    const expected = ['__stack_pointer:global', 'add16:function', 'add32:function', 'add4:function', 'add8:function'];
    if (exports.join() !== expected.join()) throw new Error(`unexpected exports: ${exports.join()}`);
    const clang = execFileSync('clang', ['--version'], { encoding: 'utf8' }).split('\n')[0];
    const sha256 = createHash('sha256').update(wasm).digest('hex');
    const base64 = Buffer.from(wasm).toString('base64');
    const lines = [
      '// GENERATED by shared/media/heic-idct/build.ts from heic-idct/idct.c; do not edit.',
      `// ${clang}; ${wasm.byteLength} bytes.`,
      '',
      '/** SHA-256 of the module below. */',
      `export const IDCT_WASM_SHA256 = '${sha256}';`,
      '',
      '/** The inverse transform module (see heic-idct/build.ts), base64. */',
      'export const IDCT_WASM_BASE64 =',
      ...chunk(base64, 100).map((part, i, all) => `  '${part}'${i === all.length - 1 ? ';' : ' +'}`),
      '',
    ];
    writeFileSync(path.join(HERE, '..', 'heic-idct-wasm.ts'), lines.join('\n'));
    process.stdout.write(`heic-idct: ${wasm.byteLength} bytes, sha256 ${sha256}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function chunk(text: string, size: number): string[] {
  const parts: string[] = [];
  for (let i = 0; i < text.length; i += size) parts.push(text.slice(i, i + size));
  return parts;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) build();
