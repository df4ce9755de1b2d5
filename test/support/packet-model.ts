/**
 * A fake OpenAI model for packet runs (issue 30), for the fake provider server (./fake-server.ts): a page
 * classification request (its prompt carries CLASSIFY_MARKER) is answered from the page's text alone — the text
 * between the request's `<document>` markers, laid out as lines — by the same rules the local engine applies to words
 * (so it is a model that reads text, not one told the truth); an extraction request is answered with every field of its schema null.
 * Timed like a real model when asked: `firstTokenMs` to the first token, then `tokensPerSecond` of the answer.
 */
import type { EvidenceWord } from '../../shared/fields/types.js';
import { localPageEvidence } from '../../shared/packets/local-evidence.js';
import { CLASSIFY_MARKER } from '../../shared/worker/packet-evidence.js';
import type { RecordedRequest, ScriptedResponse } from './fake-server.js';
import { openaiAnswer } from './openai-answers.js';

export interface ModelTiming {
  firstTokenMs: number;
  tokensPerSecond: number;
}

/** The text between the request's `<document>` markers (empty when it has none). */
export function documentTextOf(request: RecordedRequest): string {
  const body = JSON.stringify(request.body ?? {});
  const match = /<document>\\n([\s\S]*?)\\n<\/document>/.exec(body);
  return match ? (JSON.parse(`"${match[1]}"`) as string) : '';
}

/**
 * The text as words on a page, read as a monospaced listing: one row per line, a word's x from its column, each
 * character cell as wide as it is tall, so one space reads as a space and two or more as a gap between table cells
 * (shared/providers/local/layout.ts CELL_GAP), as a reader of the text sees them.
 */
export function wordsOfText(text: string): EvidenceWord[] {
  const lines = text.split('\n');
  const longest = Math.max(120, ...lines.map((line) => line.length));
  const cell = Math.min(1 / longest, 0.8 / (lines.length + 1));
  const rowHeight = cell / 0.8;
  const words: EvidenceWord[] = [];
  for (const [row, line] of lines.entries()) {
    for (const match of line.matchAll(/\S+/g)) {
      const x0 = (match.index ?? 0) * cell;
      const y0 = row * rowHeight;
      words.push({ text: match[0], bbox: [x0, y0, x0 + match[0].length * cell, y0 + cell] });
    }
  }
  return words;
}

/** The classes a classification prompt lists (`Classes: a, b, other.`). */
function classesOf(request: RecordedRequest): string[] {
  const match = /Classes: ([a-z_, ]+)\./.exec(JSON.stringify(request.body ?? {}));
  return (match?.[1] ?? '')
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '' && c !== 'other');
}

/** Every property of the request's answer schema as null: a valid answer that finds nothing. */
function nullAnswer(request: RecordedRequest): Record<string, null> {
  const find = (value: unknown): Record<string, unknown> | undefined => {
    if (typeof value !== 'object' || value === null) return undefined;
    const properties = (value as { properties?: unknown }).properties;
    if (typeof properties === 'object' && properties !== null) return properties as Record<string, unknown>;
    for (const child of Object.values(value)) {
      const found = find(child);
      if (found) return found;
    }
    return undefined;
  };
  return Object.fromEntries(Object.keys(find(request.body) ?? {}).map((key) => [key, null]));
}

/** A responder for packet runs; `timing` delays each answer as a real model's would be. */
export function packetModel(timing?: ModelTiming): (request: RecordedRequest) => ScriptedResponse {
  return (request) => {
    const classify = JSON.stringify(request.body ?? {}).includes(CLASSIFY_MARKER);
    const answer = classify
      ? { pages: [localPageEvidence(1, wordsOfText(documentTextOf(request)), classesOf(request))] }
      : nullAnswer(request);
    const output = Math.ceil(JSON.stringify(answer).length / 3);
    const delayMs = timing ? Math.round(timing.firstTokenMs + (output / timing.tokensPerSecond) * 1000) : 0;
    return openaiAnswer(answer, { input: 800, output }, { delayMs });
  };
}
