// @ts-check
/**
 * Evaluations in the Quality view (quality.js; the list is quality-list.js): one evaluation (its report, providers side by side: accuracy,
 * cost, latency, and its items page by page) and one item (each field expected against what came back, with the
 * field's box drawn on the page the run read it from).
 */
import {
  $,
  ApiError,
  api,
  clearAlert,
  formatCount,
  formatMs,
  formatPercent,
  formatUsd,
  h,
  reportError,
  runPath,
  s,
  setStatus,
  shortId,
} from './app.js';
import { cell, reliabilityDiagram, table } from './quality-charts.js';

const view = $('quality-view');
const ITEMS_PAGE = 50;
/** @type {{ evaluation: any, cursors: Array<string | null> }} */
const state = { evaluation: null, cursors: [] };

const fieldValue = (value) =>
  value === null || value === undefined ? '—' : typeof value === 'string' ? value : JSON.stringify(value);

function statusBadge(status) {
  return h('span', { class: `badge badge-${status}` }, status);
}

function providersSideBySide(report) {
  return table(
    'Providers side by side',
    [['Provider'], ['Runs', true], ['Failed', true], ['Accuracy', true], ['Cost', true], ['p50 latency', true]],
    Object.entries(report.perProvider).map(([id, p]) =>
      h(
        'tr',
        {},
        h('th', { scope: 'row' }, id),
        cell(formatCount(p.runs), true),
        cell(formatCount(p.failed), true),
        cell(formatPercent(p.accuracy), true),
        cell(formatUsd(p.costUsd), true),
        cell(p.p50LatencyMs === null ? '—' : formatMs(p.p50LatencyMs), true),
      ),
    ),
  );
}

function outcomeBadge(outcome) {
  const kind = outcome === 'right' ? 'completed' : outcome === 'wrong' ? 'failed' : 'queued';
  return h('span', { class: `badge badge-${kind}` }, outcome);
}

function itemsTable(evaluation) {
  const names = [...new Set((evaluation.items ?? []).flatMap((item) => Object.keys(item.fields ?? {})))].sort();
  return table(
    'Items (one run each)',
    [['Document'], ['Provider'], ['Status'], ...names.map((n) => [n])],
    (evaluation.items ?? []).map((item) =>
      h(
        'tr',
        {},
        h(
          'th',
          { scope: 'row' },
          h(
            'button',
            {
              type: 'button',
              class: 'link',
              onclick: () => void openItem(item),
              'aria-label': `Item ${item.index + 1}, run ${item.jobId}`,
            },
            `#${item.index + 1} · ${shortId(item.jobId)}`,
          ),
        ),
        cell(item.provider ?? '—'),
        cell(statusBadge(item.status)),
        names.map((n) => cell(item.fields?.[n] ? outcomeBadge(item.fields[n].outcome) : '—')),
      ),
    ),
  );
}

function renderEvaluation(evaluation) {
  const part = h('section', {
    class: 'panel',
    id: 'quality-evaluation',
    'aria-labelledby': 'quality-evaluation-heading',
    tabindex: '-1',
  });
  part.append(
    h('h3', { id: 'quality-evaluation-heading' }, `Evaluation ${evaluation.name}`),
    h(
      'p',
      { class: 'hint' },
      `${evaluation.status}: ${formatCount(evaluation.progress.itemsDone)} of ${formatCount(evaluation.progress.itemsTotal)} runs done; ` +
        `held ${formatUsd(evaluation.estimatedCostUsd)}, charged ${formatUsd(evaluation.chargedUsd)}, refunded ${formatUsd(evaluation.refundedUsd)}.`,
    ),
  );
  const report = evaluation.report;
  if (report) {
    part.append(
      h(
        'p',
        {},
        `Accuracy ${formatPercent(report.accuracy)} over every field; review flag caught ${report.review.wrongFlagged} of ${report.review.wrongRuns} runs with a wrong field, and flagged ${report.review.rightFlagged} of ${report.review.rightRuns} all-right runs.`,
      ),
      table(
        'Per field',
        [
          ['Field'],
          ['Compared', true],
          ['Right', true],
          ['Accuracy', true],
          ['Missing', true],
          ['Extra', true],
          ['Mean score', true],
        ],
        Object.entries(report.perField).map(([name, f]) =>
          h(
            'tr',
            {},
            h('th', { scope: 'row' }, name),
            cell(formatCount(f.compared), true),
            cell(formatCount(f.right), true),
            cell(formatPercent(f.accuracy), true),
            cell(formatCount(f.missing), true),
            cell(formatCount(f.extra), true),
            cell(f.meanScore === null ? '—' : f.meanScore.toFixed(3), true),
          ),
        ),
      ),
      providersSideBySide(report),
      h('div', { class: 'charts' }, reliabilityDiagram(report.calibration, 'Reliability diagram (this evaluation)')),
    );
  }
  part.append(itemsTable(evaluation));
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of items' });
  if (state.cursors.length > 0) {
    pager.append(h('button', { type: 'button', class: 'button', onclick: () => void pageItems(-1) }, 'Previous items'));
  }
  if (evaluation.nextItemsCursor) {
    pager.append(h('button', { type: 'button', class: 'button', onclick: () => void pageItems(1) }, 'Next items'));
  }
  part.append(pager, h('div', { id: 'quality-item' }));
  return part;
}

export async function openEvaluation(evaluationId, cursor = null) {
  clearAlert();
  try {
    const evaluation = await api(`v1/evaluations/${encodeURIComponent(evaluationId)}`, {
      query: { itemsLimit: ITEMS_PAGE, itemsCursor: cursor },
    });
    state.evaluation = evaluation;
    document.getElementById('quality-evaluation')?.remove();
    const part = renderEvaluation(evaluation);
    view.append(part);
    part.focus();
    setStatus(`Evaluation ${evaluation.name} opened.`);
  } catch (error) {
    reportError(error, 'Loading the evaluation');
  }
}

async function pageItems(direction) {
  const evaluation = state.evaluation;
  if (!evaluation) return;
  let cursor = null;
  if (direction > 0) {
    state.cursors.push(evaluation.nextItemsCursor);
    cursor = evaluation.nextItemsCursor;
  } else {
    state.cursors.pop();
    cursor = state.cursors[state.cursors.length - 1] ?? null;
  }
  await openEvaluation(evaluation.evaluationId, cursor);
}

// ---------- one item: expected against what came back, the field's box on the page ----------

async function preview(run, name) {
  const evidence = run.fields?.[name];
  const page = evidence?.page ?? 1;
  const pdf = run.file?.type === 'application/pdf';
  const answer = await api(runPath(run.jobId, '/file'), { query: pdf ? { page } : {} });
  const size = pdf ? { width: answer.width, height: answer.height } : run.file;
  const img = h('img', {
    src: answer.url,
    alt: `Page ${page} of ${run.file?.name ?? run.jobId}`,
    class: 'preview-image',
  });
  const stage = h('div', { class: 'preview-stage' }, img);
  const box = evidence?.bbox;
  if (Array.isArray(box) && box.length === 4) {
    const width = 1000;
    const height = Math.round((1000 * (size?.height || 1000)) / (size?.width || 1000));
    const [x0, y0, x1, y1] = box;
    stage.append(
      s(
        'svg',
        {
          class: 'preview-boxes',
          viewBox: `0 0 ${width} ${height}`,
          preserveAspectRatio: 'none',
          'aria-hidden': 'true',
          focusable: 'false',
        },
        s(
          'g',
          { class: 'field-box active' },
          s('rect', {
            x: x0 * width,
            y: y0 * height,
            width: Math.max(1, (x1 - x0) * width),
            height: Math.max(1, (y1 - y0) * height),
            rx: 3,
            'vector-effect': 'non-scaling-stroke',
          }),
        ),
      ),
    );
  }
  return h(
    'figure',
    { class: 'quality-preview' },
    stage,
    h(
      'figcaption',
      {},
      Array.isArray(box)
        ? `The box of ${name} on page ${page}.`
        : `No box for ${name}: the run did not place its value on the page.`,
    ),
  );
}

async function openItem(item) {
  const holder = document.getElementById('quality-item');
  if (!holder) return;
  clearAlert();
  const part = h('section', { class: 'panel', 'aria-labelledby': 'quality-item-heading', tabindex: '-1' });
  part.append(h('h4', { id: 'quality-item-heading' }, `Item ${item.index + 1}: run ${item.jobId}`));
  const fields = Object.entries(item.fields ?? {});
  const where = h('div', { class: 'quality-where' });
  let run = null;
  const show = async (name) => {
    try {
      run ??= await api(runPath(item.jobId));
      where.replaceChildren(await preview(run, name));
    } catch (error) {
      where.replaceChildren();
      if (error instanceof ApiError && error.status === 404) {
        where.append(h('p', { class: 'notice' }, 'The file is no longer kept (uploads are kept 24 hours).'));
      } else reportError(error, 'Loading the page');
    }
  };
  part.append(
    item.status === 'queued'
      ? h('p', { class: 'hint' }, 'This run has not finished yet.')
      : table(
          'Expected against what came back',
          [['Field'], ['Expected'], ['Got'], ['Outcome'], ['Score', true], ['Confidence', true], ['On the page']],
          fields.map(([name, f]) =>
            h(
              'tr',
              {},
              h('th', { scope: 'row' }, name),
              cell(fieldValue(f.expected)),
              cell(fieldValue(f.got)),
              cell(outcomeBadge(f.outcome)),
              cell(f.score.toFixed(3), true),
              cell(f.confidence === null ? '—' : f.confidence.toFixed(3), true),
              cell(
                item.status === 'completed'
                  ? h(
                      'button',
                      {
                        type: 'button',
                        class: 'button',
                        onclick: () => void show(name),
                        'aria-label': `Show ${name} on the page`,
                      },
                      'Show',
                    )
                  : '—',
              ),
            ),
          ),
        ),
    where,
  );
  holder.replaceChildren(part);
  part.focus();
  setStatus(`Item ${item.index + 1} opened.`);
  const first = fields.find(([, f]) => f.outcome !== 'right') ?? fields[0];
  if (first && item.status === 'completed') await show(first[0]);
}

/** Forgets the open evaluation (the view is drawn again). */
export function resetEvaluations() {
  state.evaluation = null;
  state.cursors = [];
}
