// split: parse a CSV of flow records and shard it by a hash of the source address, so every flow
// of one source lands in the same detector. FLAG false: the i-th output (shard i) goes to the i-th
// child (detect<i>). Malformed rows are counted and dropped, never fatal.
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { COLUMNS, SHARDS, fnv1a, inputPaths, jobPrefix } from './flowlib.mjs';

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function parseRow(cells) {
  if (cells.length !== COLUMNS.length) return undefined;
  const [ts, src, dst, port, proto, bytes, packets, duration] = cells;
  const nums = [Number(ts), Number(port), Number(bytes), Number(packets), Number(duration)];
  if (!IPV4.test(src) || !IPV4.test(dst) || nums.some((n) => !Number.isFinite(n) || n < 0)) return undefined;
  return { ts: nums[0], src_ip: src, dst_ip: dst, dst_port: nums[1], proto, bytes: nums[2], packets: nums[3], duration_ms: nums[4] };
}

export async function task(inputs, pathin, pathout) {
  const [file] = inputPaths(inputs, pathin);
  const job = jobPrefix(file);
  const lines = (await readFile(file, 'utf8')).split(/\r?\n/).filter((l) => l.trim() !== '');
  const header = lines.shift()?.split(',').map((s) => s.trim());
  if (!header || header.join(',') !== COLUMNS.join(',')) throw new Error(`${basename(file)}: expected the header ${COLUMNS.join(',')}`);
  const shards = Array.from({ length: SHARDS }, () => []);
  let rejected = 0;
  for (const line of lines) {
    const row = parseRow(line.split(',').map((s) => s.trim()));
    if (!row) {
      rejected++;
      continue;
    }
    shards[fnv1a(row.src_ip) % SHARDS].push(row);
  }
  await mkdir(pathout, { recursive: true });
  const total = shards.reduce((n, s) => n + s.length, 0);
  const outputs = [];
  for (let i = 0; i < SHARDS; i++) {
    const out = join(pathout, `${job}_split_shard${i}`);
    await writeFile(out, JSON.stringify({ job, source: basename(file), shard: i, shards: SHARDS, total, rejected, flows: shards[i] }));
    outputs.push(out);
  }
  return outputs;
}
