// @ts-check
/**
 * The dashboard's Quality view (contract-v1.2 §1): accuracy from reviews (GET v1/quality) — per field, over time, and a
 * reliability diagram —, and evaluations (GET v1/evaluations): providers side by side (accuracy, cost, latency) and
 * each item's fields, expected against what came back, with the field's box drawn on the page.
 * A module of its own beside app.js (whose helpers it imports: one module instance, the same CSP rules): every server
 * string through text nodes, no inline style, the key only in the x-api-key header.
 */
import {
  $,
  api,
  clearAlert,
  formatCount,
  formatPercent,
  formatTime,
  h,
  reportError,
  setStatus,
  showView,
} from './app.js';
import { accuracyChart, cell, reliabilityDiagram, table } from './quality-charts.js';
import { resetEvaluations } from './quality-evaluations.js';
import { evaluationsList, loadEvaluations, resetEvaluationsList } from './quality-list.js';

const view = $('quality-view');
const tab = $('tab-quality');

function renderQuality(quality) {
  const fields = Object.entries(quality.fields);
  const part = h('section', { class: 'panel', 'aria-labelledby': 'quality-reviews-heading' });
  part.append(h('h3', { id: 'quality-reviews-heading' }, 'Accuracy from reviews'));
  if (quality.verifiedRuns === 0) {
    part.append(
      h(
        'p',
        { class: 'empty-state' },
        'No reviewed runs in the last 30 days: accuracy appears here once runs are verified.',
      ),
    );
    return part;
  }
  part.append(
    h(
      'p',
      { class: 'hint' },
      `${formatCount(quality.verifiedRuns)} reviewed runs since ${formatTime(quality.from)}: ${formatPercent(quality.accuracy)} of their fields right.`,
    ),
    table(
      'Per field',
      [['Field'], ['Reviewed', true], ['Corrected', true], ['Accuracy', true]],
      fields.map(([name, f]) =>
        h(
          'tr',
          {},
          h('th', { scope: 'row' }, name),
          cell(formatCount(f.verified), true),
          cell(formatCount(f.corrected), true),
          cell(formatPercent(f.accuracy), true),
        ),
      ),
    ),
    table(
      'Per provider',
      [['Provider'], ['Reviewed runs', true], ['Fields', true], ['Corrected', true], ['Accuracy', true]],
      Object.entries(quality.providers).map(([id, p]) =>
        h(
          'tr',
          {},
          h('th', { scope: 'row' }, id),
          cell(formatCount(p.verifiedRuns), true),
          cell(formatCount(p.verified), true),
          cell(formatCount(p.corrected), true),
          cell(formatPercent(p.accuracy), true),
        ),
      ),
    ),
    h(
      'div',
      { class: 'charts' },
      accuracyChart(quality.series),
      reliabilityDiagram(quality.calibration, 'Reliability diagram (reviews)'),
    ),
  );
  return part;
}

// ---------- loading ----------

async function loadQuality() {
  setStatus('Loading quality…');
  try {
    const [quality, evaluations] = await Promise.all([api('v1/quality'), loadEvaluations()]);
    resetEvaluations();
    resetEvaluationsList();
    view.replaceChildren(
      h('h2', { id: 'quality-heading', class: 'visually-hidden' }, 'Quality'),
      renderQuality(quality),
      evaluationsList(evaluations),
    );
    setStatus(
      `Quality: ${formatCount(quality.verifiedRuns)} reviewed runs in the last 30 days; ${evaluations.nextCursor ? `the newest ${formatCount(evaluations.items.length)}` : formatCount(evaluations.items.length)} evaluations.`,
    );
  } catch (error) {
    reportError(error, 'Loading quality');
  }
}

tab.addEventListener('click', () => {
  clearAlert();
  showView('quality');
  void loadQuality();
});
