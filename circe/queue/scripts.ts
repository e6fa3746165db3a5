// Lua scripts: each step that must be atomic for a restarted runner to lose nothing is one
// script, and each costs one round trip (the per-item command count is what bounds throughput).
// Blob holder sets are `<blob key>:h`. Scripts derive some keys from prefixes, which is fine on
// a single Redis (Jupiter does not support Redis Cluster).
import type { Redis } from 'ioredis';

const FINISH_FN = `
-- Take a job out of its item's in-flight set; when it was the last one, mark the item done,
-- record its makespan (bounded list) and return it, else return -1.
local function finish_item(pending, item, stats, makespans, jobId, now)
  redis.call('SREM', pending, jobId)
  if redis.call('SCARD', pending) > 0 then return -1 end
  if redis.call('EXISTS', item) == 0 then return -1 end
  if redis.call('HSETNX', item, 'doneAt', now) == 0 then return -1 end
  local entered = tonumber(redis.call('HGET', item, 'enteredAt') or now)
  local last = tonumber(redis.call('HGET', item, 'lastOutputAt') or now)
  local ms = last - entered
  redis.call('HSET', item, 'makespanMs', ms)
  redis.call('LPUSH', makespans, ms)
  redis.call('LTRIM', makespans, 0, 9999)
  redis.call('HINCRBY', stats, 'items:done', 1)
  return ms
end
-- A receiver took its copy: drop it from the holders; the last one deletes the bytes.
local function release(blobPrefix, blob, holder)
  local holders = blobPrefix .. blob .. ':h'
  redis.call('SREM', holders, holder)
  if redis.call('SCARD', holders) == 0 then redis.call('DEL', blobPrefix .. blob, holders) end
end
`;

const ARRIVE = `
-- KEYS: done marker, join hash, runtime record hash
-- ARGV: field (job id), input JSON, numInputs, rt field, enter ts, blob key prefix
-- Returns {'dup', outbox} | {'wait'} | {'run', input1, bytes1, input2, bytes2, ...}: the inputs
-- come with their bytes so that a run costs one round trip.
redis.call('HSETNX', KEYS[3], ARGV[4], ARGV[5])
local done = redis.call('GET', KEYS[1])
if done then return {'dup', done} end
local k = tonumber(ARGV[3])
local inputs
if k <= 1 then
  inputs = {ARGV[2]}
else
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  if redis.call('HLEN', KEYS[2]) < k then return {'wait'} end
  inputs = redis.call('HVALS', KEYS[2])
end
local out = {'run'}
for _, inp in ipairs(inputs) do
  local blob = cjson.decode(inp)['blob']
  table.insert(out, inp)
  table.insert(out, redis.call('GET', ARGV[6] .. blob) or '')
end
return out
`;

const STAGE = `
-- KEYS: blob, blob holders, item's in-flight set; ARGV: bytes, receiving job ids...
-- Stores one output and registers its receivers before their jobs exist, so the item can
-- never look finished too early.
redis.call('SET', KEYS[1], ARGV[1])
for i = 2, #ARGV do
  redis.call('SADD', KEYS[2], ARGV[i])
  redis.call('SADD', KEYS[3], ARGV[i])
end
return 1
`;

const COMMIT = FINISH_FN + `
-- A task finished an item: store its outputs and register their receivers, mark the task done
-- for the item (the marker holds the outbox: the jobs to add, which the caller adds right after
-- this script on the same connection; a redelivered job re-adds them from there, so a crash
-- between this script and the adds loses nothing), free the inputs, record runtimes and events,
-- and finish the job.
-- KEYS: done, join, rt, stats, events, pending, item, makespans
-- ARGV: 1 doneTtl, 2 task, 3 start, 4 finish, 5 node, 6 files, 7 eventsMaxLen, 8 now, 9 jobId,
--       10 blob key prefix, 11 outbox JSON, 12 n events, then n event JSONs,
--       then n releases, then (blob, holder) pairs, then per output: blob id, bytes, n ids, ids...
local i = 12
local nev = tonumber(ARGV[i])
local events = {}
for j = 1, nev do events[j] = ARGV[i + j] end
i = i + nev + 1
local nrel = tonumber(ARGV[i])
local releases = {}
for j = 1, nrel do releases[j] = {ARGV[i + 2 * j - 1], ARGV[i + 2 * j]} end
i = i + 2 * nrel + 1
while i <= #ARGV do
  local blob = ARGV[10] .. ARGV[i]
  redis.call('SET', blob, ARGV[i + 1])
  local nids = tonumber(ARGV[i + 2])
  for j = 1, nids do
    redis.call('SADD', blob .. ':h', ARGV[i + 2 + j])
    redis.call('SADD', KEYS[6], ARGV[i + 2 + j])
  end
  i = i + 3 + nids
end
redis.call('SET', KEYS[1], ARGV[11], 'EX', ARGV[1])
redis.call('DEL', KEYS[2])
local t = ARGV[2]
redis.call('HSET', KEYS[3], t .. '|start', ARGV[3], t .. '|finish', ARGV[4], t .. '|node', ARGV[5], t .. '|file', ARGV[6])
redis.call('HINCRBY', KEYS[4], 'processed:' .. t, 1)
for _, ev in ipairs(events) do
  redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[7], '*', 'json', ev)
end
for _, r in ipairs(releases) do release(ARGV[10], r[1], r[2]) end
return finish_item(KEYS[6], KEYS[7], KEYS[4], KEYS[8], ARGV[9], ARGV[8])
`;

const DELIVER = FINISH_FN + `
-- The sink wrote the file: count it delivered once, or as a suppressed duplicate; free the blob;
-- finish the job. KEYS: delivered names, item, stats, pending, makespans
-- ARGV: output name, now, job id, blob key prefix, blob id
-- Returns {makespan, delivered names...} when the item finished, else {-1}.
if redis.call('SADD', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[2], 'lastOutputAt', ARGV[2])
  redis.call('HINCRBY', KEYS[3], 'delivered', 1)
else
  redis.call('HINCRBY', KEYS[3], 'dupSuppressed', 1)
end
release(ARGV[4], ARGV[5], ARGV[3])
local ms = finish_item(KEYS[4], KEYS[2], KEYS[3], KEYS[5], ARGV[3], ARGV[2])
if ms < 0 then return {-1} end
local out = redis.call('SMEMBERS', KEYS[1])
table.insert(out, 1, ms)
return out
`;

const RELEASE = FINISH_FN + `
-- ARGV: blob key prefix, blob id, holder (job id)
release(ARGV[1], ARGV[2], ARGV[3])
return 1
`;

const FINISH = FINISH_FN + `
-- KEYS: pending set, item hash, stats hash, makespans list; ARGV: job id, now
return finish_item(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2])
`;

export interface ScriptedRedis extends Redis {
  jArriveBuffer(done: string, join: string, rt: string, field: string, input: string, k: number, rtField: string, enterTs: number, blobPrefix: string): Promise<Buffer[]>;
  jStage(blob: string, holders: string, pending: string, bytes: Buffer, ...jobIds: string[]): Promise<number>;
  jCommit(...args: Array<string | number | Buffer>): Promise<number>;
  jDeliver(out: string, item: string, stats: string, pending: string, makespans: string, name: string, now: number, jobId: string, blobPrefix: string, blob: string): Promise<Array<number | string>>;
  jRelease(blobPrefix: string, blob: string, holder: string): Promise<number>;
  jFinish(pending: string, item: string, stats: string, makespans: string, jobId: string, now: number): Promise<number>;
}

/** Define Jupiter's scripts on a connection (idempotent). */
export function withScripts(redis: Redis): ScriptedRedis {
  const r = redis as ScriptedRedis;
  if (typeof (r as Partial<ScriptedRedis>).jCommit !== 'function') {
    redis.defineCommand('jArrive', { numberOfKeys: 3, lua: ARRIVE });
    redis.defineCommand('jStage', { numberOfKeys: 3, lua: STAGE });
    redis.defineCommand('jCommit', { numberOfKeys: 8, lua: COMMIT });
    redis.defineCommand('jDeliver', { numberOfKeys: 5, lua: DELIVER });
    redis.defineCommand('jRelease', { numberOfKeys: 0, lua: RELEASE });
    redis.defineCommand('jFinish', { numberOfKeys: 4, lua: FINISH });
  }
  return r;
}
