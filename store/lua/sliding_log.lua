-- rlsim sliding log: every admitted unit's timestamp in a sorted set (exact, costly).
-- KEYS[1]  sorted set, score = time (µs), member = "<time>:<n>"
-- ARGV     1 now (µs; empty: the store's clock, read with TIME)  2 limit  3 window (µs)
--          4 burst (unused)  5 cost  6 keep (ms)
-- Returns  {allowed 0|1, remaining, retry_after (µs; -1: never), reset (µs)}
-- retry_after is when enough of the oldest units have left the window for a refused
-- request to fit (never when cost exceeds limit); reset is when the newest unit leaves.
-- Both count from now.
-- Members are built with string.format('%.0f'): Lua 5.1 would print a 16-digit number
-- in exponent form and two members would collide.
--
-- Time that goes backwards. The log's clock is the later of now and its newest entry: a
-- caller whose clock is behind is judged, and logged, at the newest time the log holds,
-- so it counts every entry a caller ahead of it counted. Only an admission trims the log,
-- and only below its own (newest) time minus W, so no entry a later decision could still
-- count is ever dropped: nothing is credited twice. The key lives for a window after its
-- newest entry plus `keep` (twice the skew of the callers' clocks); the TTL only collects
-- garbage.
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[5])
local keep = tonumber(ARGV[6])

local at = now
local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if newest[2] and tonumber(newest[2]) > at then
  at = tonumber(newest[2])
end
local cutoff = string.format('%.0f', at - window)
local n = redis.call('ZCOUNT', KEYS[1], '(' .. cutoff, '+inf')
if n + cost > limit then
  local reset = 0
  if n > 0 then
    reset = tonumber(newest[2]) + window - now
  end
  if cost > limit then
    return {0, math.max(limit - n, 0), -1, reset}
  end
  -- The unit whose leaving makes room: the (n + cost − limit)-th oldest in the window.
  local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. cutoff, '+inf', 'WITHSCORES', 'LIMIT', n + cost - limit - 1, 1)
  return {0, math.max(limit - n, 0), tonumber(oldest[2]) + window - now, reset}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', cutoff)
local stamp = string.format('%.0f', at)
for i = 1, cost do
  redis.call('ZADD', KEYS[1], stamp, stamp .. ':' .. (n + i))
end
redis.call('PEXPIRE', KEYS[1], math.ceil((at + window - now) / 1000) + keep)
return {1, limit - n - cost, 0, at + window - now}
