// @ts-check
/**
 * The list of evaluations in the Quality view (quality.js): one page of GET v1/evaluations at a time, newest first,
 * paged with the API's cursor (every evaluation is reachable, not only the newest page).
 */
import {
  api,
  clearAlert,
  formatCount,
  formatPercent,
  formatTime,
  formatUsd,
  h,
  reportError,
  setStatus,
} from './app.js';
import { cell, table } from './quality-charts.js';
import { openEvaluation } from './quality-evaluations.js';

/**
 * The page shown, and the cursors of the pages before it (the first page's is null).
 * @type {{ page: { nextCursor?: string | null } | null, cursors: (string | null)[] }}
 */
const list = { page: null, cursors: [] };

function statusBadge(status) {
  return h('span', { class: `badge badge-${status}` }, status);
}

/** Evaluations per page of the list (GET v1/evaluations pages with a cursor, newest first). */
export const EVALUATIONS_PAGE = 20;

/**
 * The list of evaluations, one page of GET v1/evaluations (`{items, nextCursor}`), with buttons to the next and the
 * previous page; it draws itself again in place when paged.
 */
export function evaluationsList(page) {
  const part = h('section', {
    class: 'panel',
    id: 'quality-evaluations',
    'aria-labelledby': 'quality-evaluations-heading',
    tabindex: '-1',
  });
  part.append(h('h3', { id: 'quality-evaluations-heading' }, 'Evaluations'));
  if (page.items.length === 0 && list.cursors.length === 0) {
    part.append(
      h(
        'p',
        { class: 'empty-state' },
        'No evaluations yet: `npx vision eval DIR` scores a folder of your documents (docs/evaluation.md).',
      ),
    );
    return part;
  }
  const first = list.cursors.length * EVALUATIONS_PAGE + 1;
  part.append(
    table(
      'Evaluations, newest first',
      [['Name'], ['Status'], ['Runs done', true], ['Accuracy', true], ['Charged', true], ['Created']],
      page.items.map((e) =>
        h(
          'tr',
          {},
          h(
            'th',
            { scope: 'row' },
            h('button', { type: 'button', class: 'link', onclick: () => void openEvaluation(e.evaluationId) }, e.name),
          ),
          cell(statusBadge(e.status)),
          cell(`${formatCount(e.progress.itemsDone)} of ${formatCount(e.progress.itemsTotal)}`, true),
          cell(formatPercent(e.report?.accuracy), true),
          cell(formatUsd(e.chargedUsd), true),
          cell(formatTime(e.createdAt)),
        ),
      ),
    ),
  );
  if (list.cursors.length > 0 || page.nextCursor) {
    const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of evaluations' });
    if (list.cursors.length > 0) {
      pager.append(
        h(
          'button',
          { type: 'button', class: 'button', onclick: () => void pageEvaluations(-1) },
          'Previous evaluations',
        ),
      );
    }
    pager.append(
      h(
        'span',
        { class: 'page-label' },
        `Evaluations ${formatCount(first)}–${formatCount(first + page.items.length - 1)}`,
      ),
    );
    if (page.nextCursor) {
      pager.append(
        h('button', { type: 'button', class: 'button', onclick: () => void pageEvaluations(1) }, 'Next evaluations'),
      );
    }
    part.append(pager);
  }
  list.page = page;
  return part;
}

/**
 * One page of evaluations (null: the first).
 * @param {string | null} [cursor]
 */
export function loadEvaluations(cursor = null) {
  return api('v1/evaluations', { query: { limit: EVALUATIONS_PAGE, cursor } });
}

async function pageEvaluations(direction) {
  clearAlert();
  const cursors = [...list.cursors];
  if (direction > 0) cursors.push(list.page?.nextCursor ?? null);
  else cursors.pop();
  try {
    const page = await loadEvaluations(cursors[cursors.length - 1] ?? null);
    list.cursors = cursors;
    const part = evaluationsList(page);
    document.getElementById('quality-evaluations')?.replaceWith(part);
    part.focus();
    setStatus(`Page ${formatCount(cursors.length + 1)} of the evaluations shown.`);
  } catch (error) {
    reportError(error, 'Loading evaluations');
  }
}

/** Forgets the pages (the view is drawn again from the first). */
export function resetEvaluationsList() {
  list.page = null;
  list.cursors = [];
}
