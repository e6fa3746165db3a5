// A text Gantt chart of a schedule: one row per node, bars scaled to the makespan.
import type { MapResult } from './result.js';

/** Row per node (in `nodes` order); each task is drawn as a run of one letter, duplicates in lower case. */
export function ganttText(result: MapResult, nodes: string[], width = 60): string {
  const tasks = Object.keys(result.schedule);
  const sym = new Map<string, string>();
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  tasks.forEach((t, i) => sym.set(t, alphabet[i % alphabet.length] as string));
  const span = result.makespan > 0 ? result.makespan : 1;
  const col = (x: number): number => Math.min(width, Math.max(0, Math.round((x / span) * width)));
  const nameWidth = Math.max(4, ...nodes.map((n) => n.length));
  const lines: string[] = [];
  for (const node of nodes) {
    const row = Array<string>(width).fill('.');
    const draw = (task: string, start: number, finish: number, lower: boolean): void => {
      let a = col(start);
      let b = col(finish);
      if (b <= a) b = Math.min(width, a + 1);
      if (a >= width) a = width - 1;
      const ch = sym.get(task) ?? '?';
      for (let i = a; i < b; i++) row[i] = lower ? ch.toLowerCase() : ch;
    };
    for (const t of tasks) {
      const s = result.schedule[t];
      if (s && s.node === node) draw(t, s.start, s.finish, false);
    }
    for (const d of result.duplicates) if (d.node === node) draw(d.task, d.start, d.finish, true);
    lines.push(`${node.padEnd(nameWidth)} |${row.join('')}|`);
  }
  lines.push(`${''.padEnd(nameWidth)}  0${' '.repeat(Math.max(1, width - 1 - fmt(span).length))}${fmt(span)} s`);
  const legend = tasks.map((t) => `${sym.get(t)}=${t}`).join(' ');
  lines.push(`legend: ${legend}${result.duplicates.length ? ' (lower case = duplicate copy)' : ''}`);
  return lines.join('\n');
}

function fmt(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 1 ? x.toFixed(2) : x.toPrecision(3);
}
