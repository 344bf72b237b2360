/**
 * Bar charts drawn by the server as inline SVG: no script, no outside asset, nothing the page's
 * CSP (csp.ts) would need to allow. Colours come from dashboard.css classes, sizes from the
 * viewBox (the chart scales with the page). Each bar has a <title> (its value on hover) and the
 * chart a text alternative; the same numbers are in the table beside it.
 */
import { html, type Html } from './html.js';

export interface Bar {
  label: string;
  value: number;
  /** The value in words, for the bar's title. */
  text: string;
}

const W = 720;
const H = 220;
const PAD = { top: 12, right: 8, bottom: 34, left: 56 };

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

export function barChart(bars: Bar[], opts: { title: string; axis: (v: number) => string; id: string }): Html {
  const max = niceMax(Math.max(0, ...bars.map((b) => b.value)));
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const step = bars.length ? innerW / bars.length : innerW;
  const barW = Math.max(1, step * 0.7);
  const y = (v: number) => PAD.top + innerH - (v / max) * innerH;
  const ticks = [0, 0.5, 1].map((f) => f * max);
  // Label every bar when they fit, else about ten of them.
  const every = Math.max(1, Math.ceil(bars.length / 10));
  return html`<figure class="chart" id="${opts.id}"><svg viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${opts.id}-caption" xmlns="http://www.w3.org/2000/svg">
${ticks.map((v) => html`<line class="grid" x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"/><text class="tick" x="${PAD.left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${opts.axis(v)}</text>`)}
${bars.map((b, i) => {
    const x = PAD.left + i * step + (step - barW) / 2;
    const top = y(b.value);
    return html`<rect class="bar" x="${x.toFixed(1)}" y="${top.toFixed(1)}" width="${barW.toFixed(1)}" height="${Math.max(0, PAD.top + innerH - top).toFixed(1)}"><title>${b.label}: ${b.text}</title></rect>${i % every === 0 ? html`<text class="tick" x="${(x + barW / 2).toFixed(1)}" y="${H - PAD.bottom + 16}" text-anchor="middle">${b.label}</text>` : ''}`;
  })}
</svg><figcaption id="${opts.id}-caption">${opts.title}</figcaption></figure>`;
}
