/**
 * One local HTTP server (test/support/fake-server.ts) standing in for every cloud provider's API, answering each
 * request with a successful response in that API's wire format and with the usage the provider would REALISTICALLY
 * report for it. Token counts are derived from the request actually received (the text we send, the image as sent,
 * the schema or tool we define) with the providers' documented formulas, and from the answer the fake gives. The
 * assumptions (bench/README.md, "Estimate vs actual") are the constants below. OpenAI's input text is counted with
 * OpenAI's own tokenizer (gpt-tokenizer, o200k_base), as OpenAI bills it, so that its estimate ÷ price does not depend
 * on the planner's own counting rule; the other providers publish no tokenizer and are billed by the ratios below.
 *
 * Routing: POST /v1/responses → OpenAI Responses API; POST /v1/messages → Anthropic Messages API;
 * POST …:generateContent → Gemini API; POST /model/{id}/converse → Bedrock Runtime Converse; `x-amz-target:
 * Textract.<Operation>` → Textract (AWS JSON 1.1, sync and Start/Get job operations). Textract's PAGE/LINE/WORD blocks
 * carry Geometry (the case's line boxes, else one line under the other) so that its words are evidence for grounding
 * (test/integration/grounding.test.ts); the geometry changes no usage the fake reports.
 * Over 400 lines: five providers' wire formats in one server, so their usage rules sit side by side and stay alike.
 */
import {
  type FakeServer,
  type RecordedRequest,
  type ScriptedResponse,
  startFakeServer,
} from '../test/support/fake-server.js';

// ---------------------------------------------------------------------------------------------------------------
// The token model (assumptions; see bench/README.md)
// ---------------------------------------------------------------------------------------------------------------

export const TOKEN_MODEL = {
  /** English prose: ~4 characters per token (the providers' rule of thumb; OpenAI's input text: o200k_base instead). */
  proseCharsPerToken: 4,
  /** JSON (schemas, tool definitions, JSON answers): punctuation and short keys tokenise denser, ~3 characters. */
  jsonCharsPerToken: 3,
  /**
   * Text a text-layer PDF page carries: a typical business page is 500–800 tokens; the fake bills 650 per page for
   * the document text of an `analyze` request, whatever the (sparse, ~80-token) fixture pages hold.
   */
  textPageTokens: 650,
  /** A text answer (a summary): 100 tokens plus 20 per page. */
  summaryBaseTokens: 100,
  summaryTokensPerPage: 20,
  openai: {
    /** images-vision guide, GPT-5 mini family: 32 px patches, at most 1,536 (scaled down beyond), x1.62. */
    patchPx: 32,
    patchBudget: 1536,
    patchMultiplier: 1.62,
    /** Message framing (~3 per message) and the structured-output wrapper. */
    framingTokens: 20,
    /** reasoning.effort "none": no reasoning tokens. */
    reasoningTokens: 0,
  },
  anthropic: {
    /** vision docs: tokens = width x height / 750, for the image as sent. */
    imagePixelsPerToken: 750,
    /** Tool-use system prompt with tool_choice "tool" (313 tokens on Claude 4 models) x1.3 for the newer tokenizer. */
    toolSystemPromptTokens: 410,
    framingTokens: 10,
    /** The tool_use block around the answer's JSON. */
    toolCallOutputTokens: 25,
  },
  gemini: {
    /** media-resolution docs, Gemini 3: an image at the default (high) resolution bills 1,120 tokens. */
    imageTokens: 1120,
    /** Thinking level LOW on a short extraction or summary: a few hundred thought tokens (billed as output). */
    thoughtsTokens: 256,
    framingTokens: 5,
  },
  bedrock: {
    /** Nova rescales an image so its long side is at least ~896 px, and bills ~500–700 pixels per token. */
    novaMinLongSide: 896,
    pixelsPerToken: 600,
    /** Tool-use prompt Bedrock/Nova add for a forced tool (not published; sized like Claude's). */
    toolSystemPromptTokens: 300,
    framingTokens: 10,
    toolCallOutputTokens: 20,
  },
} as const;

const T = TOKEN_MODEL;

export const proseTokens = (text: string): number => Math.ceil(text.length / T.proseCharsPerToken);
export const jsonTokens = (value: unknown): number => Math.ceil(JSON.stringify(value).length / T.jsonCharsPerToken);

/** The text-layer pages a request (or an answer) quotes: each is billed as a typical page, not by its own length. */
interface Quoted {
  pages: number;
}

/** `text` without the case's text-layer pages it quotes (each counted in `quoted`). */
function withoutPages(text: string, c: FakeCase, quoted: Quoted): string {
  let rest = text;
  for (const page of c.pageTexts ?? []) {
    if (page === '' || !rest.includes(page)) continue;
    rest = rest.replace(page, '');
    quoted.pages += 1;
  }
  return rest;
}

/**
 * Tokens of a text we send: each text-layer page it quotes (a whole document's, or a chunk's pages) as the typical page
 * it stands for, TOKEN_MODEL.textPageTokens; the rest counted by `count`.
 */
function sentTextTokens(text: string, c: FakeCase, quoted: Quoted, count: (text: string) => number = proseTokens) {
  const seen: Quoted = { pages: 0 };
  const rest = withoutPages(text, c, seen);
  quoted.pages += seen.pages;
  return count(rest) + seen.pages * T.textPageTokens;
}

/** What the fake answers a request: the case's answer, or the answer for the pages the request quoted. */
function answerFor(c: FakeCase, quoted: Quoted): Record<string, unknown> {
  return c.answerFor && quoted.pages > 0 ? c.answerFor(quoted.pages) : c.answer;
}

/**
 * Output tokens of an answer before the run's length factor: `measure` (each provider's own rule) of the answer without
 * the text-layer pages it quotes (an open analysis repeats the document's text), each of those a typical page.
 */
function answerTokens(
  answer: Record<string, unknown>,
  c: FakeCase,
  measure: (rest: Record<string, unknown>) => number,
) {
  const quoted: Quoted = { pages: 0 };
  const strip = (value: unknown): unknown => {
    if (typeof value === 'string') return withoutPages(value, c, quoted);
    if (Array.isArray(value)) return value.map(strip);
    if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, strip(v)]));
    return value;
  };
  const rest = strip(answer) as Record<string, unknown>;
  return measure(rest) + quoted.pages * T.textPageTokens;
}

/** OpenAI's tokenizer (o200k_base), loaded on the first OpenAI request: it takes about a second to import. */
let o200k: ((text: string) => number) | undefined;
async function o200kTokens(): Promise<(text: string) => number> {
  o200k ??= (await import('gpt-tokenizer/encoding/o200k_base')).countTokens;
  return o200k;
}

// ---------------------------------------------------------------------------------------------------------------
// What the fake answers
// ---------------------------------------------------------------------------------------------------------------

/** A field Textract's AnalyzeExpense reports: its normalised type and the text it read. */
export interface ExpenseField {
  type: string;
  text: string;
}

/** The input being run, as the fakes need to answer it. */
export interface FakeCase {
  /** What a model answers: the result object (`{text}` for text output). */
  answer: Record<string, unknown>;
  /** The answer to a request that quotes `pages` of the text-layer pages (a chunk's), when it depends on them. */
  answerFor?: (pages: number) => Record<string, unknown>;
  textOutput: boolean;
  pages: number;
  /**
   * The text layer of each page as the worker sends it: wherever a request or an answer quotes one, it is billed as
   * a typical page (TOKEN_MODEL.textPageTokens) instead of by its own, sparse, length.
   */
  pageTexts?: string[];
  /**
   * How much longer (or shorter) than the answer this run's answer is billed: 1 for the answer itself; the estimates
   * phase varies it (±30 %) and raises it for its calibration-drift scenario.
   */
  lengthFactor?: number;
  /** The document's lines per page (what Textract reads). */
  pageLines: string[][];
  /**
   * Where each of `pageLines` stands (per page, per line), for the Textract blocks' Geometry; a line without a box is
   * laid out one below the other from the top of the page.
   */
  lineBoxes?: FakeBox[][];
  /** AnalyzeExpense summary fields (receipts, invoices). */
  expense: ExpenseField[];
}

/** Usage the fake reported, per request, for the report. */
export interface FakeRequestUsage {
  provider: string;
  operation: string;
  inputTokens?: number;
  outputTokens?: number;
  imageTokens?: number;
  pages?: number;
}

async function imageSize(base64: string): Promise<{ width: number; height: number }> {
  const { default: sharp } = await import('sharp');
  const meta = await sharp(Buffer.from(base64, 'base64')).metadata();
  return { width: meta.width ?? 0, height: meta.height ?? 0 };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
const records = (value: unknown): Record<string, unknown>[] => (Array.isArray(value) ? value.filter(isRecord) : []);

/** Output tokens as billed: the answer's tokens scaled by the run's length factor. */
const billedOutput = (tokens: number, c: FakeCase): number => Math.max(1, Math.round(tokens * (c.lengthFactor ?? 1)));

/**
 * A PDF read as a file (a scan: text PDFs go as text): each page bills its page image by the provider's rule (OpenAI:
 * the patch rule on a letter page at 150 dpi; Anthropic: the page at the 1568 px long side, ~1,600 tokens; Gemini 3:
 * 560 a page at the default medium resolution; Nova: its size table for the page at 1568 px).
 */
const PDF_PAGE_TOKENS = { openai: Math.round(1536 * 1.62), anthropic: 1600, gemini: 560, bedrock: 3890 } as const;

// --- OpenAI Responses API --------------------------------------------------------------------------------------

async function openaiImageTokens(url: string): Promise<number> {
  const { width, height } = await imageSize(url.slice(url.indexOf(',') + 1));
  const o = T.openai;
  let patches = Math.ceil(width / o.patchPx) * Math.ceil(height / o.patchPx);
  if (patches > o.patchBudget) {
    // Scaled down until the patches fit the budget (the guide's algorithm), then counted again.
    const shrink = Math.sqrt((o.patchBudget * o.patchPx * o.patchPx) / (width * height));
    patches = Math.min(
      o.patchBudget,
      Math.ceil((width * shrink) / o.patchPx) * Math.ceil((height * shrink) / o.patchPx),
    );
  }
  return Math.round(patches * o.patchMultiplier);
}

async function openai(body: Record<string, unknown>, c: FakeCase, log: FakeRequestUsage[]): Promise<ScriptedResponse> {
  // Instructions, messages and the schema as OpenAI's tokenizer counts them.
  const count = await o200kTokens();
  const quoted: Quoted = { pages: 0 };
  let input = count(String(body.instructions ?? '')) + T.openai.framingTokens;
  let images = 0;
  const format = isRecord(body.text) && isRecord(body.text.format) ? body.text.format : {};
  input += count(JSON.stringify(format.schema ?? {}));
  for (const message of records(body.input)) {
    const content = message.content;
    if (typeof content === 'string') input += count(content);
    for (const part of records(content)) {
      if (part.type === 'input_text') input += sentTextTokens(String(part.text ?? ''), c, quoted, count);
      if (part.type === 'input_image') images += await openaiImageTokens(String(part.image_url ?? ''));
      if (part.type === 'input_file') images += c.pages * PDF_PAGE_TOKENS.openai;
    }
  }
  input += images;
  const answer = answerFor(c, quoted);
  const text = JSON.stringify(answer);
  const measure = (rest: Record<string, unknown>) =>
    c.textOutput ? proseTokens(JSON.stringify(rest)) : jsonTokens(rest);
  const output = billedOutput(answerTokens(answer, c, measure), c) + T.openai.reasoningTokens;
  log.push({
    provider: 'openai',
    operation: 'responses',
    inputTokens: input,
    outputTokens: output,
    imageTokens: images,
  });
  return {
    json: {
      id: 'resp_bench',
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'completed',
      error: null,
      incomplete_details: null,
      model: String(body.model ?? 'gpt'),
      output: [
        {
          id: 'msg_bench',
          type: 'message',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', annotations: [], logprobs: [], text }],
        },
      ],
      usage: {
        input_tokens: input,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: output,
        output_tokens_details: { reasoning_tokens: T.openai.reasoningTokens },
        total_tokens: input + output,
      },
    },
  };
}

// --- Anthropic Messages API ------------------------------------------------------------------------------------

async function anthropic(
  body: Record<string, unknown>,
  c: FakeCase,
  log: FakeRequestUsage[],
): Promise<ScriptedResponse> {
  const a = T.anthropic;
  const quoted: Quoted = { pages: 0 };
  let input = a.framingTokens + jsonTokens(body.tools ?? []) + a.toolSystemPromptTokens;
  let images = 0;
  for (const message of records(body.messages)) {
    for (const block of records(message.content)) {
      if (block.type === 'text') input += sentTextTokens(String(block.text ?? ''), c, quoted);
      if (block.type === 'image' && isRecord(block.source)) {
        const { width, height } = await imageSize(String(block.source.data ?? ''));
        images += Math.ceil((width * height) / a.imagePixelsPerToken);
      }
      if (block.type === 'document') images += c.pages * PDF_PAGE_TOKENS.anthropic;
    }
  }
  input += images;
  const answer = answerFor(c, quoted);
  const measure = (rest: Record<string, unknown>) =>
    c.textOutput ? proseTokens(JSON.stringify(rest)) : jsonTokens(rest);
  const output = billedOutput(answerTokens(answer, c, measure), c) + a.toolCallOutputTokens;
  log.push({
    provider: 'anthropic',
    operation: 'messages',
    inputTokens: input,
    outputTokens: output,
    imageTokens: images,
  });
  return {
    json: {
      id: 'msg_bench',
      type: 'message',
      role: 'assistant',
      model: String(body.model ?? 'claude'),
      content: [{ type: 'tool_use', id: 'toolu_bench', name: 'record_result', input: answer }],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: input,
        output_tokens: output,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        service_tier: 'standard',
      },
    },
  };
}

// --- Gemini API -------------------------------------------------------------------------------------------------

function gemini(body: Record<string, unknown>, c: FakeCase, log: FakeRequestUsage[]): ScriptedResponse {
  const g = T.gemini;
  const quoted: Quoted = { pages: 0 };
  let input = g.framingTokens;
  let images = 0;
  const config = isRecord(body.generationConfig) ? body.generationConfig : {};
  if (config.responseJsonSchema !== undefined) input += jsonTokens(config.responseJsonSchema);
  for (const content of records(body.contents)) {
    for (const part of records(content.parts)) {
      if (typeof part.text === 'string') input += sentTextTokens(part.text, c, quoted);
      if (isRecord(part.inlineData) && String(part.inlineData.mimeType ?? '').startsWith('image/'))
        images += g.imageTokens;
      if (isRecord(part.inlineData) && part.inlineData.mimeType === 'application/pdf')
        images += c.pages * PDF_PAGE_TOKENS.gemini;
    }
  }
  input += images;
  const answer = answerFor(c, quoted);
  const text = c.textOutput ? String(answer.text ?? '') : JSON.stringify(answer);
  const measure = (rest: Record<string, unknown>) =>
    c.textOutput ? proseTokens(String(rest.text ?? '')) : jsonTokens(rest);
  const candidates = billedOutput(answerTokens(answer, c, measure), c);
  log.push({
    provider: 'gemini',
    operation: 'generateContent',
    inputTokens: input,
    outputTokens: candidates + g.thoughtsTokens,
    imageTokens: images,
  });
  return {
    json: {
      candidates: [{ content: { role: 'model', parts: [{ text }] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: {
        promptTokenCount: input,
        candidatesTokenCount: candidates,
        thoughtsTokenCount: g.thoughtsTokens,
        totalTokenCount: input + candidates + g.thoughtsTokens,
      },
      modelVersion: 'gemini',
      responseId: 'bench',
    },
  };
}

// --- Bedrock Converse -------------------------------------------------------------------------------------------

async function bedrock(body: Record<string, unknown>, c: FakeCase, log: FakeRequestUsage[]): Promise<ScriptedResponse> {
  const b = T.bedrock;
  const quoted: Quoted = { pages: 0 };
  let input = b.framingTokens;
  let images = 0;
  for (const s of records(body.system)) input += proseTokens(String(s.text ?? ''));
  const toolConfig = isRecord(body.toolConfig) ? body.toolConfig : undefined;
  if (toolConfig) input += jsonTokens(toolConfig.tools ?? []) + b.toolSystemPromptTokens;
  for (const message of records(body.messages)) {
    for (const block of records(message.content)) {
      if (typeof block.text === 'string') input += sentTextTokens(block.text, c, quoted);
      if (isRecord(block.document)) images += c.pages * PDF_PAGE_TOKENS.bedrock;
      if (isRecord(block.image) && isRecord(block.image.source)) {
        const { width, height } = await imageSize(String(block.image.source.bytes ?? ''));
        const scale = Math.max(1, b.novaMinLongSide / Math.max(width, height, 1));
        images += Math.ceil((width * scale * height * scale) / b.pixelsPerToken);
      }
    }
  }
  input += images;
  const json = toolConfig !== undefined;
  const answer = answerFor(c, quoted);
  const output = json
    ? billedOutput(answerTokens(answer, c, jsonTokens), c) + b.toolCallOutputTokens
    : billedOutput(
        answerTokens(answer, c, (rest) => proseTokens(String(rest.text ?? ''))),
        c,
      );
  log.push({
    provider: 'bedrock',
    operation: 'converse',
    inputTokens: input,
    outputTokens: output,
    imageTokens: images,
  });
  const content = json
    ? [{ toolUse: { toolUseId: 'tooluse_bench', name: 'record_result', input: answer } }]
    : [{ text: String(answer.text ?? '') }];
  return {
    headers: { 'x-amzn-requestid': '00000000-0000-4000-8000-000000000000' },
    json: {
      output: { message: { role: 'assistant', content } },
      stopReason: json ? 'tool_use' : 'end_turn',
      usage: { inputTokens: input, outputTokens: output, totalTokens: input + output },
      metrics: { latencyMs: 900 },
    },
  };
}

// --- Textract ---------------------------------------------------------------------------------------------------

let blockIds = 0;

/** `[x0, y0, x1, y1]` relative to the page, origin top-left (as shared/fields boxes are). */
export type FakeBox = [number, number, number, number];

/** Where a line stands when the case gives no layout: one line every 4 % of the page from the top, 60 % wide. */
function defaultLineBox(index: number, line: string): FakeBox {
  const top = Math.min(0.95, 0.05 + index * 0.04);
  return [0.08, top, Math.min(0.92, 0.08 + 0.012 * line.length), top + 0.025];
}

/**
 * The boxes of a line's words: the line's box split by character count (a space counts as one character), as a
 * proportional layout would set them. Exported so a test can predict exactly where the fake's Textract put a word.
 */
export function fakeWordBoxes(line: string, box: FakeBox): { text: string; box: FakeBox }[] {
  const [x0, y0, x1, y1] = box;
  const perChar = (x1 - x0) / Math.max(1, line.length);
  const out: { text: string; box: FakeBox }[] = [];
  for (const match of line.matchAll(/\S+/g)) {
    const start = x0 + (match.index ?? 0) * perChar;
    out.push({ text: match[0], box: [start, y0, start + match[0].length * perChar, y1] });
  }
  return out;
}

const geometry = ([x0, y0, x1, y1]: FakeBox) => ({
  BoundingBox: { Left: x0, Top: y0, Width: x1 - x0, Height: y1 - y0 },
  Polygon: [
    { X: x0, Y: y0 },
    { X: x1, Y: y0 },
    { X: x1, Y: y1 },
    { X: x0, Y: y1 },
  ],
});

/**
 * PAGE, LINE and WORD blocks of every page, as Textract returns them: each with its Geometry (the case's line boxes,
 * else a line-by-line layout), each LINE with its WORDs as CHILD relationships.
 */
function blocksOf(c: FakeCase): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = [];
  c.pageLines.forEach((lines, index) => {
    const page = index + 1;
    const pageBlock: Record<string, unknown> = {
      BlockType: 'PAGE',
      Id: `b-${++blockIds}`,
      Page: page,
      Confidence: 99.9,
      Geometry: geometry([0, 0, 1, 1]),
    };
    blocks.push(pageBlock);
    const lineIds: string[] = [];
    lines.forEach((line, lineIndex) => {
      const lineBox = c.lineBoxes?.[index]?.[lineIndex] ?? defaultLineBox(lineIndex, line);
      const words = fakeWordBoxes(line, lineBox).map((word) => ({
        BlockType: 'WORD',
        Id: `b-${++blockIds}`,
        Page: page,
        Text: word.text,
        Confidence: 99.1,
        TextType: 'PRINTED',
        Geometry: geometry(word.box),
      }));
      const lineBlock = {
        BlockType: 'LINE',
        Id: `b-${++blockIds}`,
        Page: page,
        Text: line,
        Confidence: 99.2,
        Geometry: geometry(lineBox),
        Relationships: [{ Type: 'CHILD', Ids: words.map((w) => w.Id) }],
      };
      lineIds.push(lineBlock.Id);
      blocks.push(lineBlock, ...words);
    });
    pageBlock.Relationships = [{ Type: 'CHILD', Ids: lineIds }];
  });
  return blocks;
}

function expenseDocuments(c: FakeCase): Record<string, unknown>[] {
  return [
    {
      ExpenseIndex: 1,
      SummaryFields: c.expense.map((f) => ({
        Type: { Text: f.type, Confidence: 99 },
        ValueDetection: { Text: f.text, Confidence: 97 },
        PageNumber: 1,
      })),
      LineItemGroups: [],
      Blocks: blocksOf(c),
    },
  ];
}

/**
 * The pages of the document a synchronous Textract request sends (`Document.Bytes`: one page of a longer PDF when the
 * run is in page chunks), as Textract counts them for `DocumentMetadata.Pages`; the case's pages for a request that
 * names the stored object (the asynchronous API reads the whole file).
 */
async function textractPages(body: Record<string, unknown>, c: FakeCase): Promise<number> {
  const document = isRecord(body.Document) ? body.Document : undefined;
  if (typeof document?.Bytes !== 'string') return c.pages;
  const bytes = Buffer.from(document.Bytes, 'base64');
  if (bytes.subarray(0, 5).toString('latin1') !== '%PDF-') return 1;
  const mupdf = await import('mupdf');
  const doc = mupdf.Document.openDocument(new Uint8Array(bytes), 'application/pdf');
  try {
    return doc.countPages();
  } finally {
    doc.destroy();
  }
}

async function textract(
  operation: string,
  body: Record<string, unknown>,
  whole: FakeCase,
  log: FakeRequestUsage[],
): Promise<ScriptedResponse> {
  const ok = (json: Record<string, unknown>): ScriptedResponse => ({
    headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': 'bench' },
    json,
  });
  const sent = operation.startsWith('Get') ? whole.pages : await textractPages(body, whole);
  // A request for some of the pages reads (and bills) those: the case's first ones stand in for them.
  const c: FakeCase = { ...whole, pages: sent, pageLines: whole.pageLines.slice(0, sent) };
  const pages = { DocumentMetadata: { Pages: c.pages } };
  log.push({ provider: 'textract', operation, ...(operation.startsWith('Start') ? {} : { pages: c.pages }) });
  switch (operation) {
    case 'AnalyzeExpense':
      return ok({ ...pages, ExpenseDocuments: expenseDocuments(c) });
    case 'DetectDocumentText':
      return ok({ ...pages, Blocks: blocksOf(c), DetectDocumentTextModelVersion: '1.0' });
    case 'StartExpenseAnalysis':
    case 'StartDocumentTextDetection':
    case 'StartDocumentAnalysis':
      return ok({ JobId: `job-${operation}` });
    case 'GetExpenseAnalysis':
      return ok({ ...pages, JobStatus: 'SUCCEEDED', ExpenseDocuments: expenseDocuments(c) });
    case 'GetDocumentTextDetection':
      return ok({ ...pages, JobStatus: 'SUCCEEDED', Blocks: blocksOf(c), DetectDocumentTextModelVersion: '1.0' });
    default:
      return {
        status: 400,
        headers: { 'content-type': 'application/x-amz-json-1.1' },
        json: { __type: 'InvalidParameterException', message: `the benchmark's fake does not answer ${operation}` },
      };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------------------------

export interface ProviderFakes {
  url: string;
  /** Sets the input the next requests are about. */
  use(c: FakeCase): void;
  /** The usage reported since the last call, and the number of requests received. */
  take(): { requests: number; usage: FakeRequestUsage[] };
  close(): Promise<void>;
}

export async function startProviderFakes(): Promise<ProviderFakes> {
  let current: FakeCase | undefined;
  let usage: FakeRequestUsage[] = [];
  const server: FakeServer = await startFakeServer(async (request: RecordedRequest) => {
    const c = current;
    if (!c) return { status: 500, json: { error: 'no case set' } };
    const body = isRecord(request.body) ? request.body : {};
    const target = request.headers['x-amz-target'] ?? '';
    if (target.startsWith('Textract.')) return textract(target.slice('Textract.'.length), body, c, usage);
    if (request.path.startsWith('/v1/responses')) return openai(body, c, usage);
    if (request.path.startsWith('/v1/messages')) return anthropic(body, c, usage);
    if (request.path.includes(':generateContent')) return gemini(body, c, usage);
    if (/^\/model\/[^/]+\/converse/.test(request.path)) return bedrock(body, c, usage);
    return { status: 404, json: { error: `the benchmark's fake does not serve ${request.method} ${request.path}` } };
  });
  return {
    url: server.url,
    use: (c) => {
      current = c;
    },
    take: () => {
      const taken = { requests: server.requests.length, usage };
      server.requests.length = 0;
      usage = [];
      return taken;
    },
    close: () => server.close(),
  };
}
