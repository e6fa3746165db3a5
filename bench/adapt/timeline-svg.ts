// A dependency-free timeline chart as SVG text: one or two panels of series over time, with
// vertical markers (a network change, its detection, a re-map).

export interface TimelinePanel {
  label: string;
  /** Points (t seconds, value); NaN values leave a gap. */
  series: Array<{ label: string; points: Array<[number, number]> }>;
}

export interface TimelineMarker {
  t: number;
  label: string;
}

export function timelineSvg(title: string, panels: TimelinePanel[], markers: TimelineMarker[]): string {
  const colors = ['#3b6ea5', '#e0803b', '#5aa05a', '#b04a4a'];
  const W = 900;
  const panelH = 200;
  const top = 50;
  const gap = 40;
  const left = 70;
  const right = 20;
  const H = top + panels.length * (panelH + gap) + 30;
  const all = panels.flatMap((p) => p.series.flatMap((s) => s.points.map(([t]) => t)));
  const t0 = Math.min(0, ...all);
  const t1 = Math.max(1, ...all, ...markers.map((m) => m.t));
  const x = (t: number): number => left + ((t - t0) / (t1 - t0)) * (W - left - right);
  const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="15">${esc(title)}</text>`,
  ];
  panels.forEach((p, i) => {
    const py = top + i * (panelH + gap);
    const vals = p.series.flatMap((s) => s.points.map(([, v]) => v)).filter(Number.isFinite);
    const hi = Math.max(1e-9, ...vals) * 1.1;
    const y = (v: number): number => py + panelH - (v / hi) * panelH;
    out.push(`<text x="${left}" y="${py - 8}" font-size="13">${esc(p.label)}</text>`);
    for (let k = 0; k <= 4; k++) {
      const v = (hi * k) / 4;
      out.push(`<line x1="${left}" x2="${W - right}" y1="${y(v)}" y2="${y(v)}" stroke="#e4e4e4"/>`);
      out.push(`<text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${v >= 100 ? v.toFixed(0) : v.toFixed(1)}</text>`);
    }
    p.series.forEach((s, j) => {
      const segs: string[][] = [[]];
      for (const [t, v] of s.points) {
        if (!Number.isFinite(v)) segs.push([]);
        else segs[segs.length - 1]!.push(`${x(t).toFixed(1)},${y(v).toFixed(1)}`);
      }
      for (const seg of segs.filter((g) => g.length > 0)) out.push(`<polyline fill="none" stroke="${colors[j % colors.length]}" stroke-width="2" points="${seg.join(' ')}"/>`);
      out.push(`<text x="${W - right - 4}" y="${py + 14 + j * 14}" text-anchor="end" fill="${colors[j % colors.length]}">${esc(s.label)}</text>`);
    });
    for (const [k, m] of markers.entries()) {
      out.push(`<line x1="${x(m.t)}" x2="${x(m.t)}" y1="${py}" y2="${py + panelH}" stroke="#888" stroke-dasharray="4 3"/>`);
      if (i === 0) out.push(`<text x="${x(m.t) + 3}" y="${py + 12 + k * 13}" fill="#555">${esc(m.label)}</text>`);
    }
  });
  const axisY = top + panels.length * (panelH + gap) - gap + 18;
  for (let k = 0; k <= 6; k++) {
    const t = t0 + ((t1 - t0) * k) / 6;
    out.push(`<text x="${x(t)}" y="${axisY}" text-anchor="middle">${t.toFixed(0)} s</text>`);
  }
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
