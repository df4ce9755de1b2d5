/**
 * Chunk planning: how many pages of a PDF one provider call carries. Pure: computed at creation (the hold covers every
 * chunk's worst case, `chunkedCostMicros`) and recorded on the run, so the worker splits exactly as it was held.
 * Not to undo: text output is one page per call (a real model writes ~80 tokens a second: a call per page is what
 * makes a long document fast, and a page is the unit the result reports); a JSON answer stays one call while its
 * expected output fits every candidate's cap (`outputFits`) and its input stays comfortable (MAX_PAGES_PER_CALL).
 * docs/decisions.md#long-documents-run-in-page-chunks.
 */
import type { FileFacts } from '../file-facts.js';
import type { Micros } from '../money.js';
import { catalog } from '../providers/catalog.js';
import type { ProviderId, TaskSpec } from '../task.js';

/** Pages in order: `first` to `last`, 1-based, both included. */
export interface PageRange {
  first: number;
  last: number;
}

/** The most pages one call carries, whatever its output: a comfortable request, well inside every API's page limit. */
export const MAX_PAGES_PER_CALL = 50;

/**
 * Pages per call for this file, task and candidates: 1 for text output; for JSON the most pages (up to the document's,
 * at most MAX_PAGES_PER_CALL) whose output cap every language-model candidate can give in full, at least 1. A file
 * that is not a multi-page PDF is one call, as before.
 */
export function pagesPerChunk(
  facts: FileFacts,
  task: TaskSpec,
  candidates: readonly ProviderId[],
  env: NodeJS.ProcessEnv = process.env,
): number {
  const pages = Math.max(1, facts.pages);
  if (facts.kind !== 'pdf' || pages === 1) return pages;
  if (task.outputFormat === 'text') return 1;
  let size = Math.min(pages, MAX_PAGES_PER_CALL);
  for (const id of candidates) {
    const fits = catalog[id]?.outputFits;
    if (!fits) continue;
    const fitsBoth = (n: number) =>
      fits({ ...facts, pages: n }, task, 'vision', env) && fits({ ...facts, pages: n }, task, 'analyze', env);
    while (size > 1 && !fitsBoth(size)) size -= 1;
  }
  return size;
}

/** The ranges of `pages` pages in chunks of `size` (the last one shorter when they do not divide). */
export function chunkRanges(pages: number, size: number): PageRange[] {
  const step = Math.max(1, Math.floor(size));
  const ranges: PageRange[] = [];
  for (let first = 1; first <= pages; first += step) ranges.push({ first, last: Math.min(pages, first + step - 1) });
  return ranges;
}

/** Number of pages in a range. */
export function rangePages(range: PageRange): number {
  return range.last - range.first + 1;
}

/** A chunk of `pages` pages carries its share of the file's bytes (what a text-layer guess per page reads). */
function shareOf(facts: FileFacts, pages: number): number {
  return Math.ceil((facts.sizeBytes * pages) / Math.max(1, facts.pages));
}

/**
 * The facts of one chunk: the file's, with the chunk's page count and its share of the file's bytes. The plan's
 * estimate, the worker's reservations and steps, and the providers given the chunk all read the same share, or a
 * text-layer guess made for the run is unmade for its chunks (a grafted chunk PDF carries every font it uses).
 */
export function chunkFacts(facts: FileFacts, range: PageRange): FileFacts {
  const pages = rangePages(range);
  return { ...facts, pages, sizeBytes: shareOf(facts, pages) };
}

/**
 * The worst case of a run in chunks of `size` pages: the sum of each chunk's worst case as `bound` gives it (the
 * primary path of one chunk's facts). Chunks of the same size cost the same, so it is computed once per size.
 */
export function chunkedCostMicros(
  facts: FileFacts,
  size: number,
  bound: (chunk: FileFacts) => Micros | undefined,
): Micros | undefined {
  const pages = Math.max(1, facts.pages);
  const full = Math.floor(pages / size);
  const rest = pages - full * size;
  const part = (n: number): FileFacts => chunkFacts(facts, { first: 1, last: n });
  const fullCost = full > 0 ? bound(part(size)) : 0;
  const restCost = rest > 0 ? bound(part(rest)) : 0;
  if (fullCost === undefined || restCost === undefined) return undefined;
  return full * fullCost + restCost;
}

/**
 * How a run larger than one worker invocation should carry fans out (shared/worker/fanout.ts): `groups` messages, each
 * of `groupPages` pages (whole chunks; the last group shorter). Recorded on the run by the delivery that fans it out,
 * so every later delivery splits it the same way.
 */
export interface FanoutPlan {
  groups: number;
  groupPages: number;
}

/**
 * The fan-out of a run of `pages` pages in chunks of `chunkPages`, or undefined when one invocation carries it: a run
 * of more than `fanoutPages` pages (SERVICE_FANOUT_PAGES) is split into groups of the most whole chunks within
 * `fanoutPages` (at least one chunk). A split that would leave a single group is no fan-out.
 */
export function planFanout(pages: number, chunkPages: number, fanoutPages: number): FanoutPlan | undefined {
  if (pages <= fanoutPages) return undefined;
  const size = Math.max(1, Math.floor(chunkPages));
  const groupPages = Math.max(1, Math.floor(fanoutPages / size)) * size;
  const groups = Math.ceil(pages / groupPages);
  return groups > 1 ? { groups, groupPages } : undefined;
}

/**
 * A run's split into groups: as recorded on it (the delivery that fanned it out wrote it), else as `fanoutPages`
 * (SERVICE_FANOUT_PAGES) splits a chunked PDF run; undefined when one invocation carries it.
 */
export function fanoutOf(
  run: { fanout?: FanoutPlan; chunkPages?: number; file: FileFacts },
  fanoutPages: number,
): FanoutPlan | undefined {
  if (run.fanout) return run.fanout;
  if (run.chunkPages === undefined || run.file.kind !== 'pdf') return undefined;
  return planFanout(run.file.pages, run.chunkPages, fanoutPages);
}

/** The pages of group `group` (0-based) of a fanned-out run of `pages` pages. */
export function groupRange(pages: number, plan: FanoutPlan, group: number): PageRange {
  const first = group * plan.groupPages + 1;
  return { first, last: Math.min(pages, first + plan.groupPages - 1) };
}
