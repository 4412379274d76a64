/**
 * The sweep as one SVG: heatmaps of violations (0 = green) over member clock drift × driftFactor,
 * for a fast minority and a fast majority, the success rate beside them, and small multiples for
 * every ttl × network delay. A thick line separates the cells where the timing model allows a
 * violation (margin > 0) from those where it does not.
 */
import type { CellResult } from './scenario.js';
import { find } from './report.js';
import { DELAYS_MS, DRIFT_FACTORS, DRIFT_PCTS, MAIN, nodeTimeoutFor, TTLS } from './sweep.js';

interface Cell {
  fill: string;
  text: string;
  textFill: string;
  /** margin > 0: a violation is possible by the timing model. */
  unsafe: boolean;
  marked?: boolean;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const GREEN = '#1a9850';
const GREY = '#d9d9d9';

function mix(a: string, b: string, t: number): string {
  const channel = (hex: string, i: number) => parseInt(hex.slice(1 + 2 * i, 3 + 2 * i), 16);
  const c = [0, 1, 2].map((i) => Math.round(channel(a, i) + (channel(b, i) - channel(a, i)) * Math.min(1, Math.max(0, t))));
  return `#${c.map((v) => v.toString(16).padStart(2, '0')).join('')}`;
}

/** Violating pairs per holding: 0 green; 0.001 → yellow, 1 or more → dark red (log scale). */
export function violationFill(perHolding: number): string {
  if (perHolding <= 0) return GREEN;
  const t = (Math.log10(perHolding) + 3) / 3;
  return t < 0.5 ? mix('#fee08b', '#f46d43', t * 2) : mix('#f46d43', '#a50026', t * 2 - 1);
}

/** Success rate: 50 % or less white, 100 % dark blue. */
export function successFill(rate: number): string {
  return mix('#f7fbff', '#08519c', (rate - 0.5) / 0.5);
}

function violationCell(r: CellResult | undefined, marked = false): Cell {
  if (!r || !r.valid) return { fill: GREY, text: 'n/a', textFill: '#555', unsafe: false };
  const perHolding = r.acquired ? r.violations / r.acquired : 0;
  const fill = violationFill(perHolding);
  return { fill, text: String(r.violations), textFill: perHolding > 0.05 || perHolding === 0 ? '#fff' : '#222', unsafe: r.marginMs > 0, marked };
}

function successCell(r: CellResult | undefined): Cell {
  if (!r || !r.valid) return { fill: GREY, text: 'n/a', textFill: '#555', unsafe: false };
  return {
    fill: successFill(r.freeSuccessRate),
    text: (100 * r.freeSuccessRate).toFixed(0),
    textFill: r.freeSuccessRate > 0.8 ? '#fff' : '#222',
    unsafe: r.marginMs > 0,
  };
}

interface PanelStyle {
  cellW: number;
  cellH: number;
  font: number;
  xTicks: boolean;
  yTicks: boolean;
}

/** One heatmap; (x, y) is the top-left of the cell area. driftFactor grows upward, drift to the right. */
function heatmap(x: number, y: number, style: PanelStyle, cellAt: (df: number, d: number) => Cell): string {
  const { cellW, cellH, font } = style;
  const out: string[] = [];
  const rows = [...DRIFT_FACTORS].reverse();
  const cells = rows.map((df) => DRIFT_PCTS.map((d) => cellAt(df, d)));
  rows.forEach((_, r) =>
    DRIFT_PCTS.forEach((_, c) => {
      const cell = cells[r]![c]!;
      const cx = x + c * cellW;
      const cy = y + r * cellH;
      out.push(`<rect x="${cx}" y="${cy}" width="${cellW}" height="${cellH}" fill="${cell.fill}" stroke="#fff" stroke-width="1"/>`);
      if (cell.text !== 'n/a' || cellW >= 30)
        out.push(
          `<text x="${cx + cellW / 2}" y="${cy + cellH / 2 + font * 0.35}" font-size="${font}" text-anchor="middle" fill="${cell.textFill}">${esc(cell.text)}</text>`,
        );
      if (cell.marked) out.push(`<circle cx="${cx + cellW - 5}" cy="${cy + 5}" r="3" fill="#000" stroke="#fff" stroke-width="1"/>`);
    }),
  );
  // The model's boundary: an edge wherever an unsafe cell meets a safe one.
  const edges: string[] = [];
  rows.forEach((_, r) =>
    DRIFT_PCTS.forEach((_, c) => {
      if (!cells[r]![c]!.unsafe) return;
      const x0 = x + c * cellW;
      const y0 = y + r * cellH;
      if (r > 0 && !cells[r - 1]![c]!.unsafe) edges.push(`M${x0},${y0}h${cellW}`);
      if (r < rows.length - 1 && !cells[r + 1]![c]!.unsafe) edges.push(`M${x0},${y0 + cellH}h${cellW}`);
      if (c > 0 && !cells[r]![c - 1]!.unsafe) edges.push(`M${x0},${y0}v${cellH}`);
      if (c < DRIFT_PCTS.length - 1 && !cells[r]![c + 1]!.unsafe) edges.push(`M${x0 + cellW},${y0}v${cellH}`);
    }),
  );
  if (edges.length) out.push(`<path d="${edges.join('')}" stroke="#000" stroke-width="${font > 9 ? 3 : 2}" fill="none" stroke-linecap="square"/>`);
  if (style.xTicks)
    DRIFT_PCTS.forEach((d, c) =>
      out.push(
        `<text x="${x + c * cellW + cellW / 2}" y="${y + rows.length * cellH + font + 3}" font-size="${font}" text-anchor="middle" fill="#333">${d}</text>`,
      ),
    );
  if (style.yTicks)
    rows.forEach((df, r) =>
      out.push(`<text x="${x - 4}" y="${y + r * cellH + cellH / 2 + font * 0.35}" font-size="${font}" text-anchor="end" fill="#333">${df}</text>`),
    );
  return out.join('\n');
}

function text(x: number, y: number, content: string, attrs = ''): string {
  return `<text x="${x}" y="${y}" ${attrs}>${esc(content)}</text>`;
}

export function svg(results: readonly CellResult[], subtitle: string): string {
  const W = 1260;
  const parts: string[] = [];
  parts.push(
    text(
      W / 2,
      30,
      "Where Redlock's safety ends: mutual-exclusion violations under member clock drift",
      'font-size="20" font-weight="bold" text-anchor="middle"',
    ),
  );
  parts.push(text(W / 2, 52, subtitle, 'font-size="12" text-anchor="middle" fill="#444"'));

  // Row A: the headline ttl and delay.
  const big: PanelStyle = { cellW: 40, cellH: 28, font: 11, xTicks: true, yTicks: true };
  const topY = 120;
  const panels: [string, (df: number, d: number) => Cell][] = [
    [
      'Violations, 2 of 5 members fast',
      (df, d) =>
        violationCell(find(results, { ...MAIN, fastMembers: 2, driftFactor: df, driftPct: d, pauses: false }), d === 50 && (df === 0.01 || df === 0.4)),
    ],
    [
      'Violations, 3 of 5 members fast',
      (df, d) =>
        violationCell(find(results, { ...MAIN, fastMembers: 3, driftFactor: df, driftPct: d, pauses: false }), d === 50 && (df === 0.01 || df === 0.4)),
    ],
    [
      'Success % of attempts while free, 3 of 5 fast',
      (df, d) => successCell(find(results, { ...MAIN, fastMembers: 3, driftFactor: df, driftPct: d, pauses: false })),
    ],
  ];
  parts.push(
    text(
      W / 2,
      82,
      `ttl ${MAIN.ttl} ms, mean one-way network delay ${MAIN.delayMs} ms (nodeTimeout ${nodeTimeoutFor(MAIN.delayMs)} ms)`,
      'font-size="14" font-weight="bold" text-anchor="middle"',
    ),
  );
  panels.forEach(([title, cellAt], i) => {
    const x = 110 + i * 395;
    parts.push(text(x + 160, topY - 12, title, 'font-size="13" font-weight="bold" text-anchor="middle"'));
    parts.push(heatmap(x, topY, big, cellAt));
    parts.push(text(x + 160, topY + 6 * big.cellH + 32, "fast members' clock drift (%)", 'font-size="12" text-anchor="middle"'));
    parts.push(
      text(x - 46, topY + 3 * big.cellH, 'driftFactor', `font-size="12" text-anchor="middle" transform="rotate(-90 ${x - 46} ${topY + 3 * big.cellH})"`),
    );
  });

  // Legend.
  const legendY = topY + 6 * big.cellH + 62;
  let lx = 90;
  parts.push(text(lx, legendY + 11, 'violating pairs per holding:', 'font-size="11"'));
  lx += 150;
  const swatches: [string, string][] = [
    [GREEN, '0'],
    [violationFill(0.001), '0.001'],
    [violationFill(0.01), '0.01'],
    [violationFill(0.1), '0.1'],
    [violationFill(1), '≥ 1'],
    [GREY, 'n/a (ttl too short)'],
  ];
  for (const [fill, label] of swatches) {
    parts.push(`<rect x="${lx}" y="${legendY}" width="16" height="14" fill="${fill}"/>`);
    parts.push(text(lx + 20, legendY + 11, label, 'font-size="11"'));
    lx += 30 + label.length * 6;
  }
  lx += 20;
  parts.push(text(lx, legendY + 11, 'success:', 'font-size="11"'));
  lx += 56;
  for (const rate of [0.5, 0.75, 1]) {
    parts.push(`<rect x="${lx}" y="${legendY}" width="16" height="14" fill="${successFill(rate)}" stroke="#ccc"/>`);
    parts.push(text(lx + 20, legendY + 11, `${rate * 100} %`, 'font-size="11"'));
    lx += 58;
  }
  parts.push(
    text(
      90,
      legendY + 32,
      'Numbers: violating pairs (success: %). Thick line: edge of the region where the timing model allows a violation (margin = ttl·(1 − 1/rate) − drift − 2·least delay > 0, lower right of it).',
      'font-size="11" fill="#333"',
    ),
  );
  parts.push(
    text(90, legendY + 48, '● cells cross-checked on real redis-server masters under libfaketime (bench/drift/README.md).', 'font-size="11" fill="#333"'),
  );

  // Row B: small multiples: every ttl for 3 and 2 fast members, the headline ttl for 1.
  const small: PanelStyle = { cellW: 15, cellH: 12, font: 8, xTicks: true, yTicks: true };
  const sw = DRIFT_PCTS.length * small.cellW;
  const sh = DRIFT_FACTORS.length * small.cellH;
  const gap = 30;
  const rowBY = legendY + 90;
  parts.push(
    text(
      W / 2,
      rowBY,
      'Every ttl × network delay (violating pairs; same axes: drift % across, driftFactor up)',
      'font-size="14" font-weight="bold" text-anchor="middle"',
    ),
  );
  const blocks: [number, number[]][] = [
    [3, TTLS],
    [2, TTLS],
    [1, [MAIN.ttl]],
  ];
  let bx = 125;
  blocks.forEach(([fastMembers, ttls], block) => {
    const width = ttls.length * sw + (ttls.length - 1) * gap;
    parts.push(text(bx + width / 2, rowBY + 26, `${fastMembers} of 5 members fast`, 'font-size="13" font-weight="bold" text-anchor="middle"'));
    ttls.forEach((ttl, c) => parts.push(text(bx + c * (sw + gap) + sw / 2, rowBY + 46, `ttl ${ttl} ms`, 'font-size="11" text-anchor="middle"')));
    DELAYS_MS.forEach((delayMs, r) => {
      const y = rowBY + 58 + r * (sh + 34);
      if (block === 0) {
        parts.push(text(bx - 34, y + sh / 2 - 2, `delay ${delayMs} ms`, 'font-size="10" text-anchor="end"'));
        parts.push(text(bx - 34, y + sh / 2 + 10, `nodeTimeout ${nodeTimeoutFor(delayMs)} ms`, 'font-size="9" text-anchor="end" fill="#555"'));
      }
      ttls.forEach((ttl, c) => {
        parts.push(
          heatmap(bx + c * (sw + gap), y, { ...small, yTicks: c === 0 }, (df, d) =>
            violationCell(find(results, { ttl, delayMs, fastMembers, driftFactor: df, driftPct: d, pauses: false })),
          ),
        );
      });
    });
    bx += width + 55;
  });
  const H = rowBY + 58 + 3 * (sh + 34) + 10;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
