// Lua scripts: each step that must be atomic for a restarted runner to lose nothing is one script.
import type { Redis } from 'ioredis';

const ARRIVE = `
-- KEYS: done marker, join hash, runtime record hash
-- ARGV: field (job id), input JSON, numInputs, rt field, enter ts, blob key prefix
-- Returns {'dup'} | {'wait'} | {'run', input1, bytes1, input2, bytes2, ...}: the inputs come
-- with their bytes so that a run costs one round trip. (Blob keys are derived here, which is
-- fine for a single Redis; Jupiter does not support Redis Cluster.)
redis.call('HSETNX', KEYS[3], ARGV[4], ARGV[5])
if redis.call('EXISTS', KEYS[1]) == 1 then return {'dup'} end
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

const DELIVER = `
-- KEYS: delivered-names set, item hash, stats hash, blob, holders, pending
-- ARGV: output name, now, job id
-- Called after the sink wrote the file: counts it delivered once, or as a suppressed duplicate.
local fresh = redis.call('SADD', KEYS[1], ARGV[1])
if fresh == 1 then
  redis.call('HSET', KEYS[2], 'lastOutputAt', ARGV[2])
  redis.call('HINCRBY', KEYS[3], 'delivered', 1)
else
  redis.call('HINCRBY', KEYS[3], 'dupSuppressed', 1)
end
redis.call('SREM', KEYS[5], ARGV[3])
if redis.call('SCARD', KEYS[5]) == 0 then redis.call('DEL', KEYS[4], KEYS[5]) end
redis.call('SREM', KEYS[6], ARGV[3])
if redis.call('SCARD', KEYS[6]) > 0 then return -1 end
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
if redis.call('HSETNX', KEYS[2], 'doneAt', ARGV[2]) == 0 then return -1 end
local entered = tonumber(redis.call('HGET', KEYS[2], 'enteredAt') or ARGV[2])
local last = tonumber(redis.call('HGET', KEYS[2], 'lastOutputAt') or ARGV[2])
local ms = last - entered
redis.call('HSET', KEYS[2], 'makespanMs', ms)
return ms
`;

const RELEASE = `
-- KEYS: blob, holders set; ARGV: holder (job id)
redis.call('SREM', KEYS[2], ARGV[1])
if redis.call('SCARD', KEYS[2]) == 0 then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 1
end
return 0
`;

const FINISH = `
-- KEYS: pending set, item hash; ARGV: job id, now
-- Returns the makespan in ms when this job was the last one of its item in flight, else -1.
redis.call('SREM', KEYS[1], ARGV[1])
if redis.call('SCARD', KEYS[1]) > 0 then return -1 end
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
if redis.call('HSETNX', KEYS[2], 'doneAt', ARGV[2]) == 0 then return -1 end
local entered = tonumber(redis.call('HGET', KEYS[2], 'enteredAt') or ARGV[2])
local last = tonumber(redis.call('HGET', KEYS[2], 'lastOutputAt') or ARGV[2])
local ms = last - entered
redis.call('HSET', KEYS[2], 'makespanMs', ms)
return ms
`;

export interface ScriptedRedis extends Redis {
  jArriveBuffer(done: string, join: string, rt: string, field: string, input: string, k: number, rtField: string, enterTs: number, blobPrefix: string): Promise<Buffer[]>;
  jDeliver(out: string, item: string, stats: string, blob: string, holders: string, pending: string, name: string, now: number, jobId: string): Promise<number>;
  jRelease(blob: string, holders: string, holder: string): Promise<number>;
  jFinish(pending: string, item: string, jobId: string, now: number): Promise<number>;
}

/** Define Jupiter's scripts on a connection (idempotent). */
export function withScripts(redis: Redis): ScriptedRedis {
  const r = redis as ScriptedRedis;
  if (typeof (r as Partial<ScriptedRedis>).jFinish !== 'function') {
    redis.defineCommand('jArrive', { numberOfKeys: 3, lua: ARRIVE });
    redis.defineCommand('jRelease', { numberOfKeys: 2, lua: RELEASE });
    redis.defineCommand('jFinish', { numberOfKeys: 2, lua: FINISH });
    redis.defineCommand('jDeliver', { numberOfKeys: 6, lua: DELIVER });
  }
  return r;
}
