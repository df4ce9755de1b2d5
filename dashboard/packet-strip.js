// @ts-check
/**
 * A split run's documents (contract-v1.2 §3) in the run detail: a strip of the packet's pages, one cell per page,
 * grouped by document with a mark at each boundary, then one block per document (its class, pages, classification
 * confidence, review, result, and each field's page and box). Replaces the plain result of a split run.
 * Its own small element helper (no import from app.js, which imports this): every server string goes in through
 * text nodes, no inline style (the CSP forbids it; colours come from classes in packet-strip.css).
 */

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

/** Whether a completed run's result is a split result. */
export function isSplitRun(run) {
  return run.status === 'completed' && Array.isArray(run.result?.documents);
}

const range = (pages) => (pages.first === pages.last ? `page ${pages.first}` : `pages ${pages.first}–${pages.last}`);
const percent = (x) => `${Math.round(x * 100)}%`;

/** The strip: one list of pages per document, so a screen reader hears each document and its pages. */
function strip(documents) {
  const list = el('ol', { class: 'packet-strip', 'aria-label': 'Pages of the packet by document' });
  for (const doc of documents) {
    const pages = el('ol', { class: 'packet-pages', 'aria-label': `Document ${doc.index + 1}: ${range(doc.pages)}` });
    for (let p = doc.pages.first; p <= doc.pages.last; p++) pages.append(el('li', { class: 'packet-page' }, String(p)));
    list.append(
      el(
        'li',
        { class: `packet-doc packet-doc-${doc.index % 6}${doc.schemaId === 'other' ? ' packet-doc-other' : ''}` },
        el('span', { class: 'packet-doc-label' }, `${doc.index + 1}. ${doc.schemaId}`),
        pages,
      ),
    );
  }
  return list;
}

/** Each field's page and box, as the evidence gives them (pages are the packet's). */
function fieldList(fields) {
  const entries = Object.entries(fields ?? {});
  if (entries.length === 0) return null;
  const list = el('ul', { class: 'packet-fields' });
  for (const [name, evidence] of entries) {
    const where = evidence.bbox
      ? `page ${evidence.page ?? 1}, box ${evidence.bbox.map((v) => v.toFixed(2)).join(' ')}`
      : 'no box on the page';
    list.append(el('li', {}, el('code', {}, name), ` ${percent(evidence.confidence ?? 0)} — ${where}`));
  }
  return list;
}

function documentBlock(doc) {
  const heading = `Document ${doc.index + 1}: ${doc.schemaId}, ${range(doc.pages)}`;
  const id = `packet-doc-${doc.index}-heading`;
  const review = doc.review?.needed
    ? el('p', { class: 'packet-review' }, `Review needed: ${doc.review.reasons.join('; ')}`)
    : null;
  const body =
    doc.result === undefined
      ? el('p', { class: 'hint' }, 'Not extracted: none of the allowed schemas.')
      : el('pre', { class: 'result result-json' }, JSON.stringify(doc.result, null, 2));
  return el(
    'section',
    { class: 'packet-document', 'aria-labelledby': id },
    el('h4', { id }, heading),
    el('p', {}, `Classification confidence ${percent(doc.classification.confidence)}`),
    review,
    body,
    fieldList(doc.fields),
  );
}

/** The section that shows a split run's result, or null for any other run. */
export function packetSection(run) {
  if (!isSplitRun(run)) return null;
  const documents = run.result.documents;
  const pages = documents.at(-1)?.pages.last ?? 0;
  return el(
    'section',
    { class: 'detail-section', 'aria-labelledby': 'result-heading' },
    el('h3', { id: 'result-heading' }, `Documents (${documents.length} in ${pages} pages)`),
    strip(documents),
    ...documents.map(documentBlock),
  );
}
