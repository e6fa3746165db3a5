// A dependency-free grouped bar chart as SVG text.

export function barChartSvg(title: string, labels: string[], series: Array<{ label: string; values: number[] }>): string {
  const colors = ['#3b6ea5', '#e0803b', '#5aa05a', '#b04a4a'];
  const W = 900;
  const H = 420;
  const left = 60;
  const bottom = 90;
  const top = 50;
  const plotH = H - top - bottom;
  const all = series.flatMap((s) => s.values).filter(Number.isFinite);
  const lo = 1;
  const hi = Math.max(1.05, ...all) * 1.02;
  const y = (v: number): number => top + plotH - ((Math.max(lo, v) - lo) / (hi - lo)) * plotH;
  const groupW = (W - left - 20) / labels.length;
  const barW = (groupW * 0.8) / series.length;
  const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="15">${esc(title)}</text>`,
  ];
  for (let k = 0; k <= 4; k++) {
    const v = lo + ((hi - lo) * k) / 4;
    parts.push(`<line x1="${left}" x2="${W - 20}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    parts.push(`<text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${v.toFixed(2)}</text>`);
  }
  labels.forEach((label, i) => {
    const x0 = left + i * groupW + groupW * 0.1;
    series.forEach((s, j) => {
      const v = s.values[i] ?? NaN;
      if (!Number.isFinite(v)) return;
      const x = x0 + j * barW;
      parts.push(`<rect x="${x.toFixed(1)}" y="${y(v).toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${(top + plotH - y(v)).toFixed(1)}" fill="${colors[j % colors.length]}"><title>${esc(s.label)} ${esc(label)}: ${v.toFixed(4)}</title></rect>`);
    });
    const cx = left + i * groupW + groupW / 2;
    parts.push(`<text x="${cx}" y="${top + plotH + 16}" text-anchor="end" transform="rotate(-35 ${cx} ${top + plotH + 16})">${esc(label)}</text>`);
  });
  series.forEach((s, j) => {
    parts.push(`<rect x="${left + j * 170}" y="${H - 22}" width="12" height="12" fill="${colors[j % colors.length]}"/>`);
    parts.push(`<text x="${left + j * 170 + 18}" y="${H - 12}">${esc(s.label)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}
