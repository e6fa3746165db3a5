// A small parser for the Prometheus text exposition format (enough to check what /metrics says):
// every sample line must be `name{label="value",...} number`; comments must be HELP or TYPE.
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/y;

export function parsePrometheus(text: string): Sample[] {
  const out: Sample[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      if (!/^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*/.test(line)) throw new Error(`line ${i + 1}: bad comment: ${line}`);
      return;
    }
    const m = LINE.exec(line);
    if (!m) throw new Error(`line ${i + 1}: not a sample: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < body.length) {
      const at = LABEL.lastIndex;
      const l = LABEL.exec(body);
      if (!l || l.index !== at) throw new Error(`line ${i + 1}: bad labels: ${body}`);
      labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    const raw = m[3]!;
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    if (Number.isNaN(value) && raw !== 'NaN') throw new Error(`line ${i + 1}: bad value ${raw}`);
    out.push({ name: m[1]!, labels, value });
  });
  return out;
}

/** Value of the one sample with this name whose labels include `labels` (undefined if none). */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const hits = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (hits.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${hits.length} samples`);
  return hits[0]?.value;
}

/** Sum of every sample with this name whose labels include `labels`. */
export function sampleSum(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
}
