// Lua scripts: each step that must be atomic for a restarted runner to lose nothing is one
// script, and each costs one round trip (the per-item command count is what bounds throughput).
// Arrive, commit and stage take a group of items per call (a busy runner or the source sends
// what accumulated while its previous call was in flight); each item is handled exactly as if
// it came alone.
// Blob holder sets are `<blob key>:h`. Scripts derive some keys from prefixes, which is fine on
// a single Redis (Jupiter does not support Redis Cluster).
import type { Redis } from 'ioredis';

const FINISH_FN = `
-- A receiver took its copy: drop it from the holders; the last one deletes the bytes. A blob with
-- lineage (direct path: circe/dataplane/lineage.ts) kept its inputs for a re-run; they are
-- released with it (holder L<blob>), recursively.
local function release(blobPrefix, blob, holder)
  local holders = blobPrefix .. blob .. ':h'
  redis.call('SREM', holders, holder)
  if redis.call('SCARD', holders) == 0 then
    redis.call('DEL', blobPrefix .. blob, holders)
    local lin = redis.call('GET', blobPrefix .. blob .. ':l')
    if lin then
      redis.call('DEL', blobPrefix .. blob .. ':l', blobPrefix .. blob .. ':r')
      for _, b in ipairs(cjson.decode(lin)['in']) do release(blobPrefix, b, 'L' .. blob) end
    end
  end
end
-- Nothing of the item is in flight any more, so a join still holding files of it can never
-- reach NUM_INPUTS (counted in files of the job, so a FLAG-true parent or the home may send
-- fewer than it): each such join becomes a dead letter naming the task, the job and the files
-- that did arrive; their bytes are freed and the item finishes as failed. Keys derive from the
-- stats key (<A>stats): <A>joins:<item> lists the item's joins (join key -> JSON meta).
local function stuck_joins(item, stats, now)
  local base = string.sub(stats, 1, #stats - 5)
  local iid = string.sub(item, #base + 6)
  local joins = base .. 'joins:' .. iid
  local list = redis.call('HGETALL', joins)
  if #list == 0 then return end
  redis.call('DEL', joins)
  -- An item that already failed at a task keeps that error (the join is short because of it).
  local failed = redis.call('HGET', item, 'failed') == '1'
  for x = 1, #list, 2 do
    local inputs = redis.call('HVALS', list[x])
    if #inputs > 0 then
      local meta = cjson.decode(list[x + 1])
      local names, froms = {}, {}
      for _, v in ipairs(inputs) do
        local inp = cjson.decode(v)
        table.insert(names, inp['name'])
        table.insert(froms, inp['from'])
        release(base .. 'blob:', inp['blob'], inp['id'])
      end
      table.sort(names)
      local err = 'job ' .. iid .. ' can never reach NUM_INPUTS ' .. meta['n'] .. ' at task ' .. meta['task'] ..
        ': ' .. #inputs .. ' file(s) arrived (' .. table.concat(names, ', ') .. ') and no more of the job are in flight'
      redis.call('DEL', list[x])
      redis.call('LPUSH', base .. 'deadletters', cjson.encode({app = meta['app'], task = meta['task'], node = meta['node'],
        item = iid, file = table.concat(names, ', '), from = table.concat(froms, ', '), error = err, attempts = 0, ts = tonumber(now)}))
      redis.call('HINCRBY', stats, 'deadlettered:' .. meta['task'], 1)
      if not failed then
        redis.call('HSET', item, 'failed', 1, 'stuck', 1, 'error', meta['task'] .. ': ' .. err)
        failed = true
      end
    end
  end
end
-- Take a delivery out of its receiver's queued set and its item's in-flight set; when it was
-- the item's last one, mark the item done, record its makespan (bounded list), append its
-- item-done event (config/events.ts; in the same script, so a waiting client sees it at once and
-- no crash can lose it) to the events stream and to the finished stream (item-done events only:
-- what a waiting client reads, woken once per item) and return the makespan, else return -1.
-- The app's keys are derived from its stats key (\`<A>stats\`).
local function finish_item(pending, item, stats, makespans, id, now, queued, maxLen, app)
  redis.call('SREM', queued, id)
  redis.call('SREM', pending, id)
  if redis.call('SCARD', pending) > 0 then return -1 end
  if redis.call('EXISTS', item) == 0 then return -1 end
  if redis.call('HSETNX', item, 'doneAt', now) == 0 then return -1 end
  stuck_joins(item, stats, now)
  local entered = tonumber(redis.call('HGET', item, 'enteredAt') or now)
  local last = tonumber(redis.call('HGET', item, 'lastOutputAt') or now)
  local ms = last - entered
  redis.call('HSET', item, 'makespanMs', ms)
  redis.call('LPUSH', makespans, ms)
  redis.call('LTRIM', makespans, 0, 9999)
  redis.call('HINCRBY', stats, 'items:done', 1)
  local base = string.sub(stats, 1, #stats - 5)
  local itemId = string.sub(item, #base + 6)
  local outs = redis.call('SMEMBERS', base .. 'out:' .. itemId)
  table.sort(outs)
  for j, o in ipairs(outs) do outs[j] = cjson.encode(o) end
  local failed = redis.call('HGET', item, 'failed') == '1' and ',"failed":true' or ''
  local ev = '{"type":"item-done","app":' .. cjson.encode(app) .. ',"item":' .. cjson.encode(itemId) .. ',"makespanMs":' .. ms ..
    ',"outputs":[' .. table.concat(outs, ',') .. ']' .. failed .. ',"ts":' .. now .. '}'
  redis.call('XADD', base .. 'events', 'MAXLEN', '~', maxLen, '*', 'json', ev)
  redis.call('XADD', base .. 'finished', 'MAXLEN', '~', maxLen, '*', 'json', ev)
  return ms
end
`;

// A run that the task's commit refused (the task was already done for the item: a copy that ran
// without a look at the done marker) stored nothing, but its outputs' jobs were already on their
// way right behind the commit. Such a phantom delivery's blob was never written; the sender's
// done marker holds the outbox of the run that counted, and a phantom is not in it. Looked at
// only for a delivery whose blob is missing (a real one's blob exists until it is taken).
const PHANTOM_FN = `
local function phantom(senderDone, id)
  local outbox = redis.call('GET', senderDone)
  return outbox ~= false and string.find(outbox, '"' .. id .. '"', 1, true) == nil
end
`;

const ARRIVE = PHANTOM_FN + `
-- Several deliveries to one task arrive at once (a job's bundle, and what came in while the
-- runner's previous call was in flight). Per delivery, in order: record its enter time, then
--   {'phantom'}      sent by a run its sender's commit refused (PHANTOM_FN): only finished
--   {'dup', outbox}  the task already ran for the item (a redelivered or duplicated delivery)
--   {'wait'}         a join input stored until the item's other inputs are here
--   {'run', input1, bytes1, input2, bytes2, ...}  run now: the inputs come with their bytes, so
--                    that a run costs one round trip
-- NUM_INPUTS counts files of the job, whoever sent them; a waiting join is listed in the item's
-- joins hash (join key -> JSON meta) so that it becomes a dead letter if the item ends short.
-- A large single input (LUA_BYTES_MAX) is returned without its bytes (''): the caller reads them
-- with a plain GET right behind this script.
-- KEYS: per delivery 6 keys: done marker, join hash, runtime record hash, its blob, item's joins,
--   the sender's done marker
-- ARGV: 1 numInputs, 2 rt field, 3 blob key prefix, 4 join meta JSON, then per delivery: id,
--   input JSON, enter ts, '1' when the caller reads the bytes itself
local k = tonumber(ARGV[1])
local out = {}
for j = 0, #KEYS / 6 - 1 do
  local id, inp = ARGV[5 + 4 * j], ARGV[6 + 4 * j]
  local done = redis.call('GET', KEYS[6 * j + 1])
  -- A phantom leaves no trace (no enter time, no join input: it must not complete a join).
  local ghost = not done and redis.call('EXISTS', KEYS[6 * j + 4]) == 0 and phantom(KEYS[6 * j + 6], id)
  if not ghost then redis.call('HSETNX', KEYS[6 * j + 3], ARGV[2], ARGV[7 + 4 * j]) end
  if ghost then
    out[j + 1] = {'phantom'}
  elseif done then
    out[j + 1] = {'dup', done}
  elseif k <= 1 then
    out[j + 1] = {'run', inp, ARGV[8 + 4 * j] == '1' and '' or redis.call('GET', KEYS[6 * j + 4]) or ''}
  else
    local join = KEYS[6 * j + 2]
    redis.call('HSET', join, id, inp)
    if redis.call('HLEN', join) < k then
      redis.call('HSET', KEYS[6 * j + 5], join, ARGV[4])
      out[j + 1] = {'wait'}
    else
      local r = {'run'}
      for _, v in ipairs(redis.call('HVALS', join)) do
        table.insert(r, v)
        table.insert(r, redis.call('GET', ARGV[3] .. cjson.decode(v)['blob']) or '')
      end
      out[j + 1] = r
    end
  end
end
return out
`;

const STAGE = `
-- Store files (the source's batch) and register their deliveries before their jobs exist, so
-- an item can never look finished too early. A large file (LUA_BYTES_MAX) was stored by a plain
-- SET right before this script (its bytes argument is then '').
-- KEYS: per file 3 keys: blob, blob holders, the item's in-flight set
-- ARGV: 1 queued key prefix, then per file: bytes, '1' when stored already, n deliveries,
--   (id, receiving task)...
local i = 2
for f = 0, #KEYS / 3 - 1 do
  if ARGV[i + 1] ~= '1' then redis.call('SET', KEYS[3 * f + 1], ARGV[i]) end
  local n = tonumber(ARGV[i + 2])
  for j = 1, n do
    local id = ARGV[i + 1 + 2 * j]
    redis.call('SADD', KEYS[3 * f + 2], id)
    redis.call('SADD', KEYS[3 * f + 3], id)
    redis.call('SADD', ARGV[1] .. ARGV[i + 2 + 2 * j], id)
  end
  i = i + 3 + 2 * n
end
return 1
`;

const COMMIT = FINISH_FN + `
-- A task finished items (one or several, committed together): per item, store its outputs and
-- register their receivers, mark the task done for the item (the marker holds the outbox: the
-- deliveries to send, which the caller adds right after this script on the same connection; a
-- redelivered delivery re-sends them from there, so a crash between this script and the adds
-- loses nothing), free the inputs, record runtimes and events, and finish the delivery.
-- An item the task is already done for (a copy that ran without a look at the marker first:
-- the runner only looks for copies it suspects) is counted a duplicate and only finished and
-- its inputs freed: the first run's outputs and records stand.
-- KEYS: 1 stats, 2 events, 3 makespans, then per item 5 keys: done, join, rt, pending, item
-- ARGV: 1 doneTtl, 2 task, 3 node, 4 eventsMaxLen, 5 now, 6 blob key prefix, 7 queued key
--   prefix, 8 app, then per item: start, finish, files, delivery id, outbox JSON, enter, n events,
--   events..., n releases, (blob, holder)..., n outputs, per output: blob id, bytes, staged key,
--   n, (id, receiver)...
-- A large output (LUA_BYTES_MAX) comes staged: a plain SET right before this script put its bytes
-- under a key of this run alone (with a TTL, in case the script never runs), renamed to the blob
-- here (no copy), or deleted when the run is refused; its bytes argument is then ''.
-- Returns the makespan per item (-1 while the item still has deliveries in flight).
local t, pre, qpre = ARGV[2], ARGV[6], ARGV[7]
local res = {}
local i = 9
for e = 0, (#KEYS - 3) / 5 - 1 do
  local done, join, rt, pending, item = KEYS[4 + 5 * e], KEYS[5 + 5 * e], KEYS[6 + 5 * e], KEYS[7 + 5 * e], KEYS[8 + 5 * e]
  local start, finish, files, jobId, outbox, enter = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  i = i + 6
  local dup = redis.call('EXISTS', done) == 1
  local nev = tonumber(ARGV[i])
  if not dup then
    for j = 1, nev do redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], '*', 'json', ARGV[i + j]) end
  end
  i = i + nev + 1
  local nrel = tonumber(ARGV[i])
  local releases = {}
  for j = 1, nrel do releases[j] = {ARGV[i + 2 * j - 1], ARGV[i + 2 * j]} end
  i = i + 2 * nrel + 1
  local nout = tonumber(ARGV[i])
  i = i + 1
  -- A staged output whose bytes are not there (the SET failed): nothing of this item is written,
  -- and the caller's call fails (the items before it stand, as if the runner had died here).
  local o0 = i
  for o = 1, nout do
    if ARGV[o0 + 2] ~= '' and redis.call('EXISTS', ARGV[o0 + 2]) == 0 then
      return redis.error_reply('staged output ' .. ARGV[o0] .. ' is missing')
    end
    o0 = o0 + 4 + 2 * tonumber(ARGV[o0 + 3])
  end
  for o = 1, nout do
    local blob = pre .. ARGV[i]
    local staged = ARGV[i + 2]
    local nids = tonumber(ARGV[i + 3])
    if not dup then
      if staged ~= '' then
        redis.call('RENAME', staged, blob)
        redis.call('PERSIST', blob)
      else
        redis.call('SET', blob, ARGV[i + 1])
      end
      for j = 1, nids do
        local id = ARGV[i + 2 + 2 * j]
        redis.call('SADD', blob .. ':h', id)
        redis.call('SADD', pending, id)
        redis.call('SADD', qpre .. ARGV[i + 3 + 2 * j], id)
      end
    elseif staged ~= '' then
      redis.call('DEL', staged)
    end
    i = i + 4 + 2 * nids
  end
  if dup then
    redis.call('HINCRBY', KEYS[1], 'dup:' .. t, 1)
  else
    redis.call('SET', done, outbox, 'EX', ARGV[1])
    redis.call('DEL', join)
    redis.call('HSETNX', rt, t .. '|enter', enter)
    redis.call('HSET', rt, t .. '|start', start, t .. '|finish', finish, t .. '|node', ARGV[3], t .. '|file', files)
    redis.call('HINCRBY', KEYS[1], 'processed:' .. t, 1)
  end
  for _, r in ipairs(releases) do release(pre, r[1], r[2]) end
  res[e + 1] = finish_item(pending, item, KEYS[1], KEYS[3], jobId, ARGV[5], qpre .. t, ARGV[4], ARGV[8])
end
return res
`;

const DELIVER = FINISH_FN + `
-- The sink wrote the file: count it delivered once, or as a suppressed duplicate; free the blob;
-- finish the delivery. KEYS: delivered files, item, stats, pending, makespans, sink's queued set
-- ARGV: output file as written (its name, or <name>.<item> when another item owns the name: see
--   LOOK), now, delivery id, blob key prefix, blob id, eventsMaxLen, app
-- Returns {makespan, delivered names...} when the item finished, else {-1}.
if redis.call('SADD', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[2], 'lastOutputAt', ARGV[2])
  redis.call('HINCRBY', KEYS[3], 'delivered', 1)
else
  redis.call('HINCRBY', KEYS[3], 'dupSuppressed', 1)
end
release(ARGV[4], ARGV[5], ARGV[3])
local ms = finish_item(KEYS[4], KEYS[2], KEYS[3], KEYS[5], ARGV[3], ARGV[2], KEYS[6], ARGV[6], ARGV[7])
if ms < 0 then return {-1} end
local out = redis.call('SMEMBERS', KEYS[1])
table.insert(out, 1, ms)
return out
`;

const LOOK = PHANTOM_FN + `
-- The sink's look at a group of files before it writes them (one round trip). Per file:
--   {'phantom'}           sent by a run its sender's commit refused (PHANTOM_FN): never written
--   {'1', owner}          the item delivered this file already: only counted
--   {'0', owner, bytes}   a new file; bytes: the blob when wanted ('' when gone; a small file
--                         carries its own, and a file over LUA_BYTES_MAX is read by a plain
--                         GET behind this script: only the blob's existence is looked at)
-- owner: the item that owns the plain output path (this one unless another item took it first;
-- kept in Redis so that a restarted sink knows it). The item's file is the name when it owns
-- it, else <name>.<item> (sink.ts outputFile); the item's delivered set holds its files so named.
-- KEYS: 1 owners hash, then per file 3 keys: the item's delivered files, the blob, the sender's
--   done marker
-- ARGV: per file: name, plain output path, delivery id, item, '1' when the bytes are wanted
local out = {}
for f = 0, (#KEYS - 1) / 3 - 1 do
  local names, blob, sender = KEYS[2 + 3 * f], KEYS[3 + 3 * f], KEYS[4 + 3 * f]
  local name, path, id, item, want = ARGV[1 + 5 * f], ARGV[2 + 5 * f], ARGV[3 + 5 * f], ARGV[4 + 5 * f], ARGV[5 + 5 * f] == '1'
  local bytes = want and redis.call('GET', blob)
  local present = bytes or (not want and redis.call('EXISTS', blob) == 1)
  if not present and phantom(sender, id) then
    out[f + 1] = {'phantom'}
  else
    local owner = redis.call('HGET', KEYS[1], path) or item
    local file = owner == item and name or (name .. '.' .. item)
    if redis.call('SISMEMBER', names, file) == 1 then
      out[f + 1] = {'1', owner}
    else
      if redis.call('HSETNX', KEYS[1], path, item) == 1 then
        -- The paths an item owns, under a field of its own, so that trimming its records frees them.
        local owned = 'item:' .. item
        local list = redis.call('HGET', KEYS[1], owned)
        redis.call('HSET', KEYS[1], owned, list and (list .. '\\n' .. path) or path)
      end
      out[f + 1] = {'0', owner, bytes or ''}
    end
  end
end
return out
`;

const RELEASE = FINISH_FN + `
-- ARGV: blob key prefix, blob id, holder (delivery id)
release(ARGV[1], ARGV[2], ARGV[3])
return 1
`;

const FINISH = FINISH_FN + `
-- KEYS: pending set, item hash, stats hash, makespans list, receiver's queued set
-- ARGV: delivery id, now, eventsMaxLen, app
return finish_item(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], KEYS[5], ARGV[3], ARGV[4])
`;

// BullMQ re-adds a queue's wake-up marker each time it hands out a job (so that other workers of
// the queue look again). A Jupiter queue has one consumer, so after each job that consumer's next
// blocking wait returns at once and asks for a job that is not there: two round trips and two
// wake-ups of the runner and of Redis per item and stage, which on these VMs cost more CPU than
// the item's own work. The consumer drops that marker as it finishes a job, when nothing waits in
// its queue (a job added later adds its own; a delayed retry's marker is another member).
// KEYS: the queue's wait list, prioritized set, marker set
const QUIET = `
if redis.call('LLEN', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[2]) == 0 then
  redis.call('ZREM', KEYS[3], '0')
end
return 0
`;

export interface ScriptedRedis extends Redis {
  /** numKeys, keys, args: see ARRIVE. */
  jArriveBuffer(numKeys: number, ...keysAndArgs: Array<string | number>): Promise<Buffer[][]>;
  /** numKeys, keys, args: see STAGE. */
  jStage(numKeys: number, ...keysAndArgs: Array<string | number | Buffer>): Promise<number>;
  /** numKeys, keys, args: see COMMIT. */
  jCommit(numKeys: number, ...keysAndArgs: Array<string | number | Buffer>): Promise<number[]>;
  /** numKeys, keys, args: see LOOK. */
  jLookBuffer(numKeys: number, ...keysAndArgs: Array<string | number>): Promise<Buffer[][]>;
  jDeliver(out: string, item: string, stats: string, pending: string, makespans: string, queued: string, file: string, now: number, id: string, blobPrefix: string, blob: string, eventsMaxLen: number, app: string): Promise<Array<number | string>>;
  jRelease(blobPrefix: string, blob: string, holder: string): Promise<number>;
  jFinish(pending: string, item: string, stats: string, makespans: string, queued: string, id: string, now: number, eventsMaxLen: number, app: string): Promise<number>;
}

/** Define Jupiter's scripts on a connection (idempotent). */
export function withScripts(redis: Redis): ScriptedRedis {
  const r = redis as ScriptedRedis;
  if (typeof (r as Partial<ScriptedRedis>).jCommit !== 'function') {
    // Arrive and commit take a variable number of keys (the caller passes the count first).
    redis.defineCommand('jArrive', { lua: ARRIVE });
    redis.defineCommand('jStage', { lua: STAGE });
    redis.defineCommand('jCommit', { lua: COMMIT });
    redis.defineCommand('jLook', { lua: LOOK });
    redis.defineCommand('jDeliver', { numberOfKeys: 6, lua: DELIVER });
    redis.defineCommand('jRelease', { numberOfKeys: 0, lua: RELEASE });
    redis.defineCommand('jFinish', { numberOfKeys: 5, lua: FINISH });
    redis.defineCommand('jQuiet', { numberOfKeys: 3, lua: QUIET });
  }
  return r;
}
