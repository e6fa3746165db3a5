// One stage of the raw BullMQ comparison chain, in its own process (the same process layout
// as Jupiter's runners): consume queue r<i>, add the same payload to r<i+1>; the last stage
// reports progress to the parent.
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';

const [url, idx, stages] = [process.argv[2]!, Number(process.argv[3]), Number(process.argv[4])];
const opts = { removeOnComplete: true, removeOnFail: 1000 };
const next = idx < stages - 1 ? new Queue(`r${idx + 2}`, { connection: new Redis(url, { maxRetriesPerRequest: null }), prefix: 'rawproc' }) : undefined;
let done = 0;
const worker = new Worker(`r${idx + 1}`, async (job) => {
  if (next) await next.add('j', job.data as object, opts);
  else process.send?.(++done);
}, { connection: new Redis(url, { maxRetriesPerRequest: null }), prefix: 'rawproc', concurrency: 1 });
await worker.waitUntilReady();
process.send?.('ready');
process.on('SIGTERM', () => void worker.close().then(() => process.exit(0)));
