// Helpers shared by the anomaly pipeline's tasks (not a task itself).
import { basename, resolve } from 'node:path';

export const SHARDS = 3;
export const COLUMNS = ['ts', 'src_ip', 'dst_ip', 'dst_port', 'proto', 'bytes', 'packets', 'duration_ms'];

/** Jupiter's job id: the file name before the first `_`, or before the first `.` without `_`. */
export function jobPrefix(file) {
  const name = basename(file);
  const u = name.indexOf('_');
  if (u >= 0) return name.slice(0, u);
  const d = name.indexOf('.');
  return d >= 0 ? name.slice(0, d) : name;
}

/** The task contract gives one file name or a list; names are relative to pathin (absolute ones also work). */
export function inputPaths(inputs, pathin) {
  return (Array.isArray(inputs) ? inputs : [inputs]).map((f) => resolve(pathin, f));
}

/** 32-bit FNV-1a: a stable hash, so one source address always lands in the same shard. */
export function fnv1a(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

export function median(xs) {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Robust z-scores (median and median absolute deviation), resistant to the outliers we look for. */
export function robustZ(xs) {
  const med = median(xs);
  const mad = median(xs.map((x) => Math.abs(x - med))) * 1.4826 || 1e-9;
  return xs.map((x) => (x - med) / mad);
}
