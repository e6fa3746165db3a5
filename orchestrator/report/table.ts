// One look for every table Jupiter prints: no colours, a rule under the header, none between rows.
import Table from 'cli-table3';

const compact = {
  top: '─', 'top-mid': '┬', 'top-left': '┌', 'top-right': '┐',
  bottom: '─', 'bottom-mid': '┴', 'bottom-left': '└', 'bottom-right': '┘',
  left: '│', 'left-mid': '', mid: '', 'mid-mid': '', right: '│', 'right-mid': '', middle: '│',
};

export type Cell = string | number;

export interface TextTable {
  push(...rows: Cell[][]): void;
  toString(): string;
}

export function table(head: string[]): TextTable {
  const t = new Table({ head, chars: compact, style: { head: [], border: [], compact: true } });
  return {
    push: (...rows) => {
      for (const r of rows) t.push(r.map(String));
    },
    toString: () => {
      const lines = t.toString().split('\n');
      const rule = (lines[0] ?? '').replace('┌', '├').replace('┐', '┤').replaceAll('┬', '┼');
      lines.splice(2, 0, rule);
      return lines.join('\n');
    },
  };
}

export function renderTable(head: string[], rows: Cell[][]): string {
  const t = table(head);
  t.push(...rows);
  return t.toString();
}
