// @ts-check
/**
 * Pieces of the Quality view (quality.js) that draw: a table in its scroll box, a chart of accuracy per field over time,
 * and a reliability diagram (confidence bins against observed accuracy). Text through text nodes, no inline style.
 */
import { formatPercent, h, s } from './app.js';

const FIELD_COLOURS = 6;

export function table(caption, head, rows, className = '') {
  return h(
    'div',
    // A scroll box must be focusable so keyboard users can scroll it sideways on narrow screens.
    { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': caption },
    h(
      'table',
      { class: `data-table ${className}` },
      h('caption', {}, caption),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          head.map(([label, num]) => h('th', { scope: 'col', class: num ? 'num' : null }, label)),
        ),
      ),
      h('tbody', {}, rows),
    ),
  );
}

export function cell(value, num = false) {
  return h('td', { class: num ? 'num' : null }, value);
}

// ---------- accuracy from reviews ----------

/** Accuracy per field over time: one line per field, 0–100 %, a point per day with reviews. */
export function accuracyChart(series) {
  const names = [...new Set(series.flatMap((day) => Object.keys(day.fields)))].sort();
  const width = 640;
  const height = 220;
  const pad = { left: 44, right: 12, top: 12, bottom: 28 };
  const x = (i) => pad.left + (series.length === 1 ? 0.5 : i / (series.length - 1)) * (width - pad.left - pad.right);
  const y = (v) => pad.top + (1 - v) * (height - pad.top - pad.bottom);
  const summary = names
    .map((name) => {
      const last = [...series].reverse().find((day) => day.fields[name]?.accuracy !== null && day.fields[name]);
      return `${name} ${formatPercent(last?.fields[name].accuracy)} on ${last ? last.start.slice(0, 10) : '—'}`;
    })
    .join('; ');
  const svg = s('svg', {
    class: 'chart quality-chart',
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-label': `Accuracy per field by day of the reviewed runs' creation. Latest: ${summary}`,
  });
  for (const tick of [0, 0.5, 1]) {
    svg.append(
      s('line', { class: 'grid', x1: pad.left, x2: width - pad.right, y1: y(tick), y2: y(tick) }),
      s(
        'text',
        { class: 'axis', x: pad.left - 6, y: y(tick), 'text-anchor': 'end', 'dominant-baseline': 'central' },
        `${tick * 100} %`,
      ),
    );
  }
  names.forEach((name, n) => {
    const points = series
      .map((day, i) => [i, day.fields[name]?.accuracy])
      .filter(([, v]) => typeof v === 'number')
      .map(([i, v]) => `${x(i)},${y(v)}`);
    if (points.length === 0) return;
    svg.append(s('polyline', { class: `series series-${n % FIELD_COLOURS}`, points: points.join(' '), fill: 'none' }));
    for (const point of points) {
      const [cx, cy] = point.split(',');
      svg.append(s('circle', { class: `dot series-${n % FIELD_COLOURS}`, cx, cy, r: 3 }));
    }
  });
  const first = series[0]?.start.slice(0, 10) ?? '';
  const last = series[series.length - 1]?.start.slice(0, 10) ?? '';
  svg.append(
    s('text', { class: 'axis', x: pad.left, y: height - 6 }, first),
    s('text', { class: 'axis', x: width - pad.right, y: height - 6, 'text-anchor': 'end' }, last),
  );
  const legend = h(
    'ul',
    { class: 'legend' },
    names.map((name, n) =>
      h('li', {}, h('span', { class: `swatch series-${n % FIELD_COLOURS}`, 'aria-hidden': 'true' }), name),
    ),
  );
  return h(
    'figure',
    { class: 'chart-figure' },
    h('figcaption', {}, h('strong', {}, 'Accuracy per field over time')),
    svg,
    legend,
  );
}

/** Confidence bins against the accuracy observed in them; the diagonal is a perfectly calibrated confidence. */
export function reliabilityDiagram(calibration, title) {
  const size = 260;
  const pad = 36;
  const inner = size - 2 * pad;
  const counted = calibration.bins.filter((b) => b.count > 0);
  const label =
    `${title}: observed accuracy per confidence bin. AUROC ${calibration.auroc ?? 'no data'}, ECE ${calibration.ece ?? 'no data'}, ` +
    `Brier ${calibration.brier ?? 'no data'}. ` +
    counted
      .map((b) => `${Math.round(b.from * 100)}–${Math.round(b.to * 100)} %: ${formatPercent(b.accuracy)} of ${b.count}`)
      .join('; ');
  const svg = s('svg', {
    class: 'chart reliability',
    viewBox: `0 0 ${size} ${size}`,
    role: 'img',
    'aria-label': label,
  });
  svg.append(
    s('rect', { class: 'frame', x: pad, y: pad, width: inner, height: inner, fill: 'none' }),
    s('line', { class: 'diagonal', x1: pad, y1: pad + inner, x2: pad + inner, y2: pad }),
  );
  for (const bin of counted) {
    const barHeight = (bin.accuracy ?? 0) * inner;
    svg.append(
      s('rect', {
        class: 'bar',
        x: pad + bin.from * inner + 2,
        y: pad + inner - barHeight,
        width: Math.max(1, (bin.to - bin.from) * inner - 4),
        height: barHeight,
      }),
    );
  }
  svg.append(
    s('text', { class: 'axis', x: pad + inner / 2, y: size - 8, 'text-anchor': 'middle' }, 'confidence'),
    s(
      'text',
      {
        class: 'axis',
        x: 10,
        y: pad + inner / 2,
        transform: `rotate(-90 10 ${pad + inner / 2})`,
        'text-anchor': 'middle',
      },
      'accuracy',
    ),
  );
  const figures = `AUROC ${calibration.auroc ?? '—'} · ECE ${calibration.ece ?? '—'} · Brier ${calibration.brier ?? '—'}`;
  return h('figure', { class: 'chart-figure' }, h('figcaption', {}, h('strong', {}, title), ' ', figures), svg);
}
