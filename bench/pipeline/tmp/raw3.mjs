// raw chain with each stage in its own process
import { fork } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
const opts = { removeOnComplete: true };
if (process.argv[2] === 'stage') {
  const url = process.argv[3]; const i = Number(process.argv[4]);
  const next = i < 2 ? new Queue('r' + (i + 2), { connection: new Redis(url, { maxRetriesPerRequest: null }) }) : null;
  let n = 0;
  new Worker('r' + (i + 1), async (job) => { if (next) await next.add('j', job.data, opts); else if (++n % 1000 === 0) process.send?.(n); }, { connection: new Redis(url, { maxRetriesPerRequest: null }) });
} else {
  const { RedisServer } = await import('/work/main/dist/orchestrator/stack/redis-server.js');
  const server = await new RedisServer({ dir: mkdtempSync(join(tmpdir(), 'raw3-')) }).start();
  const kids = [0, 1, 2].map((i) => fork(new URL(import.meta.url).pathname, ['stage', server.url, String(i)]));
  await new Promise((r) => setTimeout(r, 1500));
  const q = new Queue('r1', { connection: new Redis(server.url, { maxRetriesPerRequest: null }) });
  const N = 3000; const t0 = performance.now();
  const done = new Promise((r) => kids[2].on('message', (n) => { if (n >= N) r(); }));
  for (let i = 0; i < N; i += 100) await q.addBulk(Array.from({ length: 100 }, () => ({ name: 'j', data: { p: 'x'.repeat(100) }, opts })));
  await done;
  console.log('raw 3-process chain items/s', (N / ((performance.now() - t0) / 1000)).toFixed(0));
  kids.forEach((k) => k.kill()); await server.stop(); process.exit(0);
}
