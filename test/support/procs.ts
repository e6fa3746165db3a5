// The processes of this machine with their command lines, for tests that check what is left
// running (a process that ends while being read is left out).
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcLine {
  pid: number;
  /** The command line, arguments separated by spaces. */
  cmd: string;
}

export function processCmdlines(): ProcLine[] {
  const out: ProcLine[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      out.push({ pid: Number(p), cmd: readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ') });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
