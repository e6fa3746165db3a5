// Jupiter's job-id rule, which joins depend on: a file's job is the part of its name before the
// first `_`, or before the first `.` when there is no `_` (`1botnet.ipsum` -> `1botnet`,
// `1botnet_task0_task1` -> `1botnet`).
import { basename } from 'node:path';

export function jobPrefix(fileName: string): string {
  const name = basename(fileName);
  const u = name.indexOf('_');
  if (u >= 0) return name.slice(0, u);
  const d = name.indexOf('.');
  return d >= 0 ? name.slice(0, d) : name;
}
