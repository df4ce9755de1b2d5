// @ts-check
/**
 * A split run's documents (contract-v1.2 §3) in the run detail: a strip of the packet's pages, one cell per page,
 * grouped by document with a mark at each boundary, then one block per document (its class, pages, classification
 * confidence, review, result, each field's page and box, and the images of its pages with boxes drawn on them).
 * Replaces the plain result of a split run.
 * Its own small element helper (no import from app.js, which imports this: app.js hands in `drawPage`, its page image
 * with boxes): every server string goes in through text nodes, no inline style (the CSP forbids it; colours come from
 * classes in packet-strip.css).
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

/** The pages (ascending) on which a field of the document has a box (pages are the packet's). */
function boxedPages(fields) {
  const pages = new Set();
  for (const evidence of Object.values(fields ?? {})) {
    if (Array.isArray(evidence?.bbox) && evidence.bbox.length === 4) pages.add(evidence.page ?? 1);
  }
  return [...pages].sort((a, b) => a - b);
}

/**
 * One page of a document with its fields' boxes: a figure whose caption names it, the image filled in once loaded
 * (`drawPage`), or a note when the worker stored no image of the page or it could not be loaded.
 */
function pageFigure(doc, page, drawPage) {
  const caption = el('figcaption', { class: 'muted' }, `Page ${page}: the boxes of document ${doc.index + 1}'s fields`);
  const body = el('p', { class: 'hint' }, `Loading page ${page}…`);
  const figure = el('figure', { class: 'packet-figure' }, caption, body);
  drawPage(doc, page).then(
    (node) => body.replaceWith(node ?? el('p', { class: 'notice' }, `No image of page ${page}; the list says where.`)),
    (error) => {
      if (error?.name === 'AbortError') return;
      body.replaceWith(el('p', { class: 'notice' }, `The image of page ${page} could not be loaded.`));
    },
  );
  return figure;
}

function documentBlock(doc, drawPage) {
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
    ...(drawPage && doc.fields ? boxedPages(doc.fields).map((page) => pageFigure(doc, page, drawPage)) : []),
  );
}

/**
 * The section that shows a split run's result, or null for any other run. `drawPage(doc, page)`, when given, resolves
 * to the image of a page of the packet with that document's field boxes on it (null: no image of the page).
 * @param {any} run
 * @param {(doc: any, page: number) => Promise<Node | null>} [drawPage]
 */
export function packetSection(run, drawPage) {
  if (!isSplitRun(run)) return null;
  const documents = run.result.documents;
  const pages = documents.at(-1)?.pages.last ?? 0;
  return el(
    'section',
    { class: 'detail-section', 'aria-labelledby': 'result-heading' },
    el('h3', { id: 'result-heading' }, `Documents (${documents.length} in ${pages} pages)`),
    strip(documents),
    ...documents.map((doc) => documentBlock(doc, drawPage)),
  );
}
