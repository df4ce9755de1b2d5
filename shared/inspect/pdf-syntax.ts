/**
 * Just enough of the PDF object syntax (ISO 32000-1 §7.2–7.3) to read cross-reference sections, trailers and the few
 * dictionaries on the way to the page count. Parsing is synchronous over a byte window; when a token runs off the end
 * of a window that is not the end of the file, the lexer throws `Incomplete` and the caller retries with a larger one.
 */

/** An indirect reference `num gen R`. */
export class PdfRef {
  constructor(
    readonly num: number,
    readonly gen: number,
  ) {}
}

/** A name object such as `/Type`, without the slash. */
export class PdfName {
  constructor(readonly name: string) {}
}

/** A PDF dictionary, keyed by name without the slash. */
export type PdfDict = Map<string, PdfValue>;

/** Any PDF object; strings are kept as raw latin1 text since nothing here needs their contents. */
export type PdfValue = number | boolean | null | string | PdfName | PdfRef | PdfValue[] | PdfDict;

/** The window ended before the construct being parsed did; retry with more bytes. */
export class Incomplete extends Error {
  /** @param needed the window size the parser knows it needs, when it knows (a table's declared length) */
  constructor(readonly needed = 0) {
    super('PDF syntax runs past the end of the window');
    this.name = 'Incomplete';
  }
}

/**
 * The file asks for more work than any honest PDF of its size could (an array of a million items, objects nested
 * hundreds deep, a cross-reference section for more objects than the file has bytes for). Not repaired by a scan:
 * the file is refused.
 */
export class ImplausiblePdf extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImplausiblePdf';
  }
}

/** The bytes are not valid PDF syntax. */
export class PdfSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PdfSyntaxError';
  }
}

export type Token =
  | { t: 'num'; v: number; int: boolean }
  | { t: 'name'; v: string }
  | { t: 'str' | 'hex'; v: string }
  | { t: 'kw'; v: string }
  | { t: '[' | ']' | '<<' | '>>' | '{' | '}' | 'eof' };

const WHITESPACE = new Uint8Array(256);
for (const c of [0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]) WHITESPACE[c] = 1;
const DELIMITER = new Uint8Array(256);
for (const c of '()<>[]{}/%') DELIMITER[c.charCodeAt(0)] = 1;

const isRegular = (c: number) => c >= 0 && WHITESPACE[c] === 0 && DELIMITER[c] === 0;
// Deeply nested arrays/dictionaries, and arrays or dictionaries of a hundred thousand items, only appear in hostile
// files (a page tree's /Kids of 200 pages, a cross-reference /Index of a few hundred subsections are the large honest
// ones); cap the recursion and the sizes.
const MAX_DEPTH = 64;
const MAX_ITEMS = 50_000;

/**
 * The number `[+-]?(\d+\.?\d*|\.\d+)` spelled by bytes [from, to), or undefined. Read from the bytes: numbers are
 * most of the tokens of a large structure (`12 0 R`), and making a string of each doubled the time to read one.
 */
function numberToken(buf: Uint8Array, from: number, to: number): Token | undefined {
  let i = from;
  const sign = buf[i] === 0x2d ? -1 : 1;
  if (buf[i] === 0x2b || buf[i] === 0x2d) i++;
  let value = 0;
  let digits = 0;
  let dot = -1;
  for (; i < to; i++) {
    const c = buf[i] ?? 0;
    if (c >= 0x30 && c <= 0x39) {
      value = value * 10 + (c - 0x30);
      digits++;
    } else if (c === 0x2e && dot < 0) {
      dot = i;
    } else {
      return undefined;
    }
  }
  if (digits === 0) return undefined;
  // Fractions and long integers go through Number() for an exactly rounded value.
  if (dot >= 0 || digits > 15) return { t: 'num', v: Number(latin1(buf, from, to)), int: dot < 0 };
  return { t: 'num', v: sign * value, int: true };
}

/** A tokenizer and object parser over one window of bytes. */
export class Lexer {
  /**
   * @param buf the window
   * @param pos where to start, relative to the window
   * @param complete true when the window reaches the end of the file (running off it is then a syntax error)
   */
  constructor(
    readonly buf: Uint8Array,
    public pos: number,
    readonly complete: boolean,
  ) {}

  /** The byte at `at`, -1 at the end of the file; throws Incomplete at the end of a partial window. */
  peek(at = this.pos): number {
    if (at < this.buf.length) return this.buf[at] ?? -1;
    if (this.complete) return -1;
    throw new Incomplete();
  }

  skipWhitespace(): void {
    for (;;) {
      const c = this.peek();
      if (c === 0x25) {
        // A comment runs to the end of the line.
        while (this.peek() !== 0x0a && this.peek() !== 0x0d && this.peek() !== -1) this.pos++;
      } else if (c >= 0 && WHITESPACE[c] === 1) {
        this.pos++;
      } else {
        return;
      }
    }
  }

  next(): Token {
    this.skipWhitespace();
    const c = this.peek();
    if (c === -1) return { t: 'eof' };
    const ch = String.fromCharCode(c);
    switch (ch) {
      case '[':
      case ']':
      case '{':
      case '}':
        this.pos++;
        return { t: ch };
      case '<':
        if (this.peek(this.pos + 1) === 0x3c) {
          this.pos += 2;
          return { t: '<<' };
        }
        return this.hexString();
      case '>':
        if (this.peek(this.pos + 1) === 0x3e) {
          this.pos += 2;
          return { t: '>>' };
        }
        throw new PdfSyntaxError(`Unexpected ">" at ${this.pos}`);
      case '(':
        return this.literalString();
      case '/':
        this.pos++;
        return { t: 'name', v: this.name() };
      case ')':
        throw new PdfSyntaxError(`Unexpected ")" at ${this.pos}`);
    }
    const start = this.pos;
    while (isRegular(this.peek())) this.pos++;
    return numberToken(this.buf, start, this.pos) ?? { t: 'kw', v: latin1(this.buf, start, this.pos) };
  }

  /** Parses one object; `num gen R` becomes a PdfRef. */
  parseValue(depth = 0): PdfValue {
    if (depth > MAX_DEPTH) throw new ImplausiblePdf(`objects nested over ${MAX_DEPTH} deep`);
    const tok = this.next();
    switch (tok.t) {
      case 'num': {
        if (!tok.int || tok.v < 0) return tok.v;
        // An integer may be the start of `num gen R`; look ahead two tokens and rewind if not.
        const save = this.pos;
        const gen = this.next();
        if (gen.t === 'num' && gen.int) {
          const r = this.next();
          if (r.t === 'kw' && r.v === 'R') return new PdfRef(tok.v, gen.v);
        }
        this.pos = save;
        return tok.v;
      }
      case 'name':
        return new PdfName(tok.v);
      case 'str':
      case 'hex':
        return tok.v;
      case '[': {
        const items: PdfValue[] = [];
        for (;;) {
          this.skipWhitespace();
          if (this.peek() === 0x5d) {
            this.pos++;
            return items;
          }
          if (items.length >= MAX_ITEMS) throw new ImplausiblePdf(`an array of over ${MAX_ITEMS} items`);
          items.push(this.parseValue(depth + 1));
        }
      }
      case '<<': {
        const dict: PdfDict = new Map();
        for (;;) {
          const key = this.next();
          if (key.t === '>>') return dict;
          if (key.t !== 'name') throw new PdfSyntaxError(`Dictionary key expected at ${this.pos}`);
          this.skipWhitespace();
          // A key directly followed by `>>` has no value (seen in the wild); treat it as null.
          if (this.peek() === 0x3e && this.peek(this.pos + 1) === 0x3e) {
            dict.set(key.v, null);
            continue;
          }
          if (dict.size >= MAX_ITEMS) throw new ImplausiblePdf(`a dictionary of over ${MAX_ITEMS} entries`);
          dict.set(key.v, this.parseValue(depth + 1));
        }
      }
      case 'kw':
        if (tok.v === 'true') return true;
        if (tok.v === 'false') return false;
        if (tok.v === 'null') return null;
        throw new PdfSyntaxError(`Unexpected keyword "${tok.v.slice(0, 20)}" at ${this.pos}`);
      default:
        throw new PdfSyntaxError(`Unexpected ${tok.t} at ${this.pos}`);
    }
  }

  private name(): string {
    let out = '';
    while (isRegular(this.peek())) {
      const c = this.peek();
      // `#xx` escapes any byte in a name.
      if (c === 0x23) {
        const hex = latin1(this.buf, this.pos + 1, this.pos + 3);
        this.peek(this.pos + 2);
        if (/^[0-9a-fA-F]{2}$/.test(hex)) {
          out += String.fromCharCode(Number.parseInt(hex, 16));
          this.pos += 3;
          continue;
        }
      }
      out += String.fromCharCode(c);
      this.pos++;
    }
    return out;
  }

  private literalString(): Token {
    this.pos++; // (
    const start = this.pos;
    // Balanced parentheses need no escaping, so nesting depth has to be tracked.
    let depth = 1;
    for (;;) {
      const c = this.peek();
      if (c === -1) throw new PdfSyntaxError('Unterminated string');
      this.pos++;
      if (c === 0x5c) this.pos++;
      else if (c === 0x28) depth++;
      else if (c === 0x29 && --depth === 0) return { t: 'str', v: latin1(this.buf, start, this.pos - 1) };
    }
  }

  private hexString(): Token {
    this.pos++; // <
    const start = this.pos;
    for (;;) {
      const c = this.peek();
      if (c === -1) throw new PdfSyntaxError('Unterminated hex string');
      this.pos++;
      if (c === 0x3e) return { t: 'hex', v: latin1(this.buf, start, this.pos - 1) };
    }
  }
}

/** Bytes [start, end) as a latin1 string (one char per byte). */
export function latin1(buf: Uint8Array, start = 0, end = buf.length): string {
  const from = Math.min(Math.max(0, start), buf.length);
  const to = Math.min(Math.max(from, end), buf.length);
  // Tokens are short: skip the Buffer view for them.
  if (to - from <= 64) return String.fromCharCode(...buf.subarray(from, to));
  return Buffer.from(buf.buffer, buf.byteOffset + from, to - from).toString('latin1');
}

/** A dictionary entry as a name (without slash), or undefined. */
export function nameOf(v: PdfValue | undefined): string | undefined {
  return v instanceof PdfName ? v.name : undefined;
}

/** A non-negative integer, or undefined. */
export function uint(v: PdfValue | undefined): number | undefined {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
}

export function isDict(v: PdfValue | undefined): v is PdfDict {
  return v instanceof Map;
}
