"""The Lua scripts of ``job_store_redis`` (its module docstring says what each key holds). Each runs on one key, or on
the two keys of one hash tag, and reads Redis's clock (``TIME``)."""

from __future__ import annotations

from pcfjudge.cache.job_record import RECORD_BYTES

_NOW = "local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
_MS = "local function ms(x) return string.format('%.0f', x) end\n"

# KEYS = owner index; ARGV = id, bytes, max jobs, max bytes, ttl ms. Returns {1|0|-1, active, bytes kept, now}.
# An entry of the earlier form "<bytes>:<expiry>" is a queued or running job's.
ADMIT = (
    _NOW
    + _MS
    + """
local entries = redis.call('HGETALL', KEYS[1])
local count, total = 0, 0
for i = 1, #entries, 2 do
  local size, expires, state = string.match(entries[i + 1], '^(%d+):(%d+):?(%a*)$')
  if size == nil or tonumber(expires) <= now then
    redis.call('HDEL', KEYS[1], entries[i])
  else
    total = total + tonumber(size)
    if state ~= 'e' then count = count + 1 end
  end
end
if count >= tonumber(ARGV[3]) then return {0, count, total, now} end
if total + tonumber(ARGV[2]) > tonumber(ARGV[4]) then return {-1, count, total, now} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. ms(now + tonumber(ARGV[5])) .. ':q')
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1, count, total, now}
"""
)
# KEYS = owner index; ARGV = id, bytes, ttl ms: the job has ended and keeps ``bytes`` for ``ttl ms`` more.
KEEP = (
    _NOW
    + _MS
    + """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. ms(now + tonumber(ARGV[3])) .. ':e')
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
"""
)
# KEYS = queue, tags; ARGV = id, owner. Queues the job at its fair tag.
ENQUEUE = (
    _MS
    + """
local last = tonumber(redis.call('HGET', KEYS[2], ':v') or '0')
local tag = math.max(last, tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0'))
redis.call('HSET', KEYS[2], ARGV[2], ms(tag + 1))
redis.call('ZADD', KEYS[1], ms(tag), ARGV[1])
return 1
"""
)
# KEYS = queue, tags; ARGV = id. Takes the job out of the queue; its tag becomes the tag last taken.
DEQUEUE = (
    _MS
    + """
local tag = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not tag then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
local last = tonumber(redis.call('HGET', KEYS[2], ':v') or '0')
if tonumber(tag) > last then redis.call('HSET', KEYS[2], ':v', ms(tonumber(tag))) end
return 1
"""
)
# KEYS = queue, tags; ARGV = id. A job given back: first in line.
REQUEUE = (
    _MS
    + """
local last = tonumber(redis.call('HGET', KEYS[2], ':v') or '0')
redis.call('ZADD', KEYS[1], ms(last - 1), ARGV[1])
return 1
"""
)
# KEYS = job; ARGV = ttl ms, then field, value pairs.
CREATE = "redis.call('HSET', KEYS[1], unpack(ARGV, 2)) redis.call('PEXPIRE', KEYS[1], ARGV[1]) return 1"
# KEYS = active index; ARGV = limit. Ids due now (lapsed leases; queued jobs of an earlier version), oldest first.
DUE = _NOW + "return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))"
# What an ended job keeps (job_record.result_bytes), computed where the record is.
_KEPT = (
    f"local function kept(response) return {RECORD_BYTES} + string.len(response) + "
    "string.len(redis.call('HGET', KEYS[1], 'webhook_url') or '') end\n"
)
_DROP = "redis.call('HDEL', KEYS[1], 'request', 'headers')\n"
# KEYS = job; ARGV = runner, lease ms, max attempts, exhausted response. Returns {code, owner, lease until or kept
# bytes, ttl ms}: 1 claimed, 2 held by a live lease, 3 failed (attempts exhausted), -1 ended, 0 gone.
CLAIM = (
    _NOW
    + _MS
    + _KEPT
    + """
local f = redis.call('HMGET', KEYS[1], 'status', 'lease_until', 'attempts', 'owner')
if not f[1] then return {0, '', 0, 0} end
local lapsed = f[1] == 'running' and tonumber(f[2] or '0') < now
if f[1] ~= 'queued' and not lapsed then
  if f[1] == 'running' then return {2, f[4], tonumber(f[2]), 0} end
  return {-1, f[4], 0, 0}
end
local attempts = tonumber(f[3] or '0')
if attempts >= tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[1], 'status', 'failed', 'finished_ms', ms(now), 'http_status', '500', 'response', ARGV[4])
  redis.call('HDEL', KEYS[1], 'runner', 'lease_until')
"""
    + _DROP
    + """
  return {3, f[4], kept(ARGV[4]), redis.call('PTTL', KEYS[1])}
end
local lease = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'status', 'running', 'runner', ARGV[1], 'lease_until', ms(lease), 'attempts', attempts + 1)
if redis.call('HEXISTS', KEYS[1], 'started_ms') == 0 then redis.call('HSET', KEYS[1], 'started_ms', ms(now)) end
return {1, f[4], lease, 0}
"""
)
# KEYS = job; ARGV = runner, lease ms, progress JSON. Returns {1, lease until} | {0} cancelled | {-1} lost.
RENEW = (
    _NOW
    + _MS
    + """
local f = redis.call('HMGET', KEYS[1], 'status', 'runner')
if f[1] == 'cancelled' then return {0, 0} end
if f[1] ~= 'running' or f[2] ~= ARGV[1] then return {-1, 0} end
local lease = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'lease_until', ms(lease), 'progress', ARGV[3])
return {1, lease}
"""
)
# KEYS = job; ARGV = runner, status, http status, response, progress, ttl ms. Returns {1, owner, kept} | {0, '', 0}.
FINISH = (
    _NOW
    + _MS
    + _KEPT
    + """
local f = redis.call('HMGET', KEYS[1], 'status', 'runner', 'owner')
if f[1] ~= 'running' or f[2] ~= ARGV[1] then return {0, '', 0} end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'finished_ms', ms(now), 'http_status', ARGV[3], 'response', ARGV[4],
  'progress', ARGV[5])
redis.call('HDEL', KEYS[1], 'runner', 'lease_until')
"""
    + _DROP
    + """
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return {1, f[3], kept(ARGV[4])}
"""
)
# KEYS = job; ARGV = runner.
RELEASE = """
local f = redis.call('HMGET', KEYS[1], 'status', 'runner')
if f[1] ~= 'running' or f[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'status', 'queued')
redis.call('HDEL', KEYS[1], 'runner', 'lease_until')
redis.call('HINCRBY', KEYS[1], 'attempts', -1)
return 1
"""
# KEYS = job. Returns {1, owner, kept, ttl ms} | {0, '', 0, 0}.
CANCEL = (
    _NOW
    + _MS
    + _KEPT
    + """
local f = redis.call('HMGET', KEYS[1], 'status', 'owner')
if f[1] ~= 'queued' and f[1] ~= 'running' then return {0, '', 0, 0} end
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'finished_ms', ms(now))
redis.call('HDEL', KEYS[1], 'runner', 'lease_until')
"""
    + _DROP
    + """
return {1, f[2], kept(''), redis.call('PTTL', KEYS[1])}
"""
)
# KEYS = job; ARGV = field, value. Sets it only on a job that still exists (never a record without its expiry).
SET_IF_EXISTS = (
    "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end return 0"
)
