// Switchboard's web page: small plots of an hour of calls, drawn as
// inline SVG from GET /api/v1/stats and /api/v1/servers/{name}/stats (see
// docs/http-api.md). Nothing is fetched from elsewhere; no library.
'use strict';

const SVG_NS = 'http://www.w3.org/2000/svg';

// svg builds an SVG element: svg('rect', {x: 1, ...}, child, ...).
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

// The plot's size in its own units; it scales to its box (CSS).
const PLOT_W = 420, PLOT_H = 72, PLOT_PAD_L = 40, PLOT_PAD_B = 12, PLOT_PAD_T = 6;

// niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function fmtNum(v) {
  if (v >= 1000) return (v / 1000).toFixed(v >= 10000 ? 0 : 1) + 'k';
  if (v >= 10 || Number.isInteger(v)) return String(Math.round(v));
  return v.toFixed(1);
}

// fmtMS writes a latency: "830 ms", "2.4 s".
function fmtMS(ms) {
  if (ms === undefined || ms === null || !(ms > 0)) return '–';
  if (ms >= 1000) return (ms / 1000).toFixed(ms >= 10000 ? 0 : 1) + ' s';
  if (ms >= 10) return Math.round(ms) + ' ms';
  return ms.toFixed(1) + ' ms';
}

// frame draws the axes of a plot whose values go up to max: the grid
// line and label of the top, the baseline, and the hour's ends.
function frame(max, unit) {
  const g = svg('g', {class: 'axis'});
  const top = PLOT_PAD_T, base = PLOT_H - PLOT_PAD_B;
  g.append(svg('line', {x1: PLOT_PAD_L, x2: PLOT_W, y1: top, y2: top, class: 'grid'}));
  g.append(svg('line', {x1: PLOT_PAD_L, x2: PLOT_W, y1: base, y2: base, class: 'base'}));
  const label = (x, y, text, anchor) => {
    const t = svg('text', {x, y, 'text-anchor': anchor});
    t.textContent = text;
    return t;
  };
  g.append(label(PLOT_PAD_L - 3, top + 4, fmtNum(max) + (unit || ''), 'end'));
  g.append(label(PLOT_PAD_L - 3, base, '0', 'end'));
  g.append(label(PLOT_PAD_L, PLOT_H - 2, '−60 min', 'start'));
  g.append(label(PLOT_W, PLOT_H - 2, 'now', 'end'));
  return g;
}

// xOf is the left edge of minute i of n; barW the width of its bar.
const xOf = (i, n) => PLOT_PAD_L + (i * (PLOT_W - PLOT_PAD_L)) / n;
const yOf = (v, max) => PLOT_H - PLOT_PAD_B - (v / max) * (PLOT_H - PLOT_PAD_B - PLOT_PAD_T);

// plotCounts draws calls (and, in the bad colour on top, errors) per
// minute as bars.
function plotCounts(minutes, {title}) {
  const n = minutes.length || 60;
  let max = 0, calls = 0, errors = 0, busiest = 0;
  for (const m of minutes) {
    max = Math.max(max, m.calls);
    calls += m.calls; errors += m.errors;
    busiest = Math.max(busiest, m.calls);
  }
  max = niceMax(max);
  const w = Math.max((PLOT_W - PLOT_PAD_L) / n - 0.6, 0.8);
  const bars = svg('g', {class: 'bars'});
  const errs = svg('g', {class: 'bars errors'});
  minutes.forEach((m, i) => {
    if (m.calls > 0) {
      const y = yOf(m.calls, max);
      bars.append(svg('rect', {x: xOf(i, n).toFixed(2), y: y.toFixed(2), width: w.toFixed(2), height: (PLOT_H - PLOT_PAD_B - y).toFixed(2)},
        svgTitle(when(m.start) + ': ' + m.calls + ' calls, ' + m.errors + ' failed')));
    }
    if (m.errors > 0) {
      const y = yOf(m.errors, max);
      errs.append(svg('rect', {x: xOf(i, n).toFixed(2), y: y.toFixed(2), width: w.toFixed(2), height: (PLOT_H - PLOT_PAD_B - y).toFixed(2)}));
    }
  });
  const desc = title + ', the last hour: ' + calls + ' calls, ' + errors + ' failed; at most ' + busiest + ' a minute';
  const none = calls === 0 ? svgText((PLOT_PAD_L + PLOT_W) / 2, PLOT_H / 2, 'no calls in the last hour', 'empty') : null;
  return plotBox(title, desc, svg('svg', {viewBox: '0 0 ' + PLOT_W + ' ' + PLOT_H, class: 'plot', role: 'img', 'aria-label': desc,
    'data-plot': 'calls', 'data-calls': calls, 'data-errors': errors}, frame(max), bars, errs, none),
  [['calls', 'calls'], ['errors', 'failed']]);
}

// plotLatency draws the median and the 99th percentile per minute as two
// lines, broken where a minute had no call.
function plotLatency(minutes, {title}) {
  const n = minutes.length || 60;
  let max = 0;
  for (const m of minutes) max = Math.max(max, m.p99_ms || 0, m.p50_ms || 0);
  max = niceMax(max);
  const line = (key, cls) => {
    const g = svg('g', {class: 'line ' + cls});
    let pts = [];
    const flush = () => {
      if (pts.length === 1) {
        const [x, y] = pts[0];
        g.append(svg('circle', {cx: x, cy: y, r: 1.6}));
      } else if (pts.length > 1) {
        g.append(svg('polyline', {points: pts.map((p) => p.join(',')).join(' ')}));
      }
      pts = [];
    };
    minutes.forEach((m, i) => {
      const v = m[key];
      if (!(v > 0)) { flush(); return; }
      pts.push([(xOf(i, n) + (PLOT_W - PLOT_PAD_L) / n / 2).toFixed(2), yOf(v, max).toFixed(2)]);
    });
    flush();
    return g;
  };
  const last = [...minutes].reverse().find((m) => m.calls > 0);
  const none = last ? null : svgText((PLOT_PAD_L + PLOT_W) / 2, PLOT_H / 2, 'no calls in the last hour', 'empty');
  const desc = title + ', the last hour' + (last ? ': latest p50 ' + fmtMS(last.p50_ms) + ', p99 ' + fmtMS(last.p99_ms) : ': no calls');
  return plotBox(title, desc, svg('svg', {viewBox: '0 0 ' + PLOT_W + ' ' + PLOT_H, class: 'plot', role: 'img', 'aria-label': desc,
    'data-plot': 'latency'}, frame(max, ' ms'), line('p99_ms', 'p99'), line('p50_ms', 'p50'), none),
  [['p50', 'p50'], ['p99', 'p99']]);
}

function svgText(x, y, text, cls) {
  const t = svg('text', {x, y, 'text-anchor': 'middle', class: cls});
  t.textContent = text;
  return t;
}

function svgTitle(text) {
  const t = svg('title');
  t.textContent = text;
  return t;
}

// plotBox puts a plot in a figure with its caption and legend.
function plotBox(title, desc, plot, legend) {
  const keys = el('span', {class: 'legend', 'aria-hidden': 'true'});
  for (const [cls, text] of legend) keys.append(el('span', {class: 'key ' + cls}, text));
  return el('figure', {class: 'plot-box'}, el('figcaption', {}, el('span', {text: title}), keys), plot);
}

// renderPlots fills box with the plots of a Stats answer.
function renderPlots(box, st, what) {
  const minutes = (st && st.minutes) || [];
  box.replaceChildren(
    plotCounts(minutes, {title: 'Calls per minute' + (what ? ' of ' + what : '')}),
    plotLatency(minutes, {title: 'Latency p50 / p99' + (what ? ' of ' + what : '')}));
  box.dataset.calls = String((st && st.calls) || 0);
}
