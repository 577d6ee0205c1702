-- rlsim sliding log: every admitted unit's timestamp in a sorted set (exact, costly).
-- KEYS[1]  sorted set, score = time (whole µs), member = "<time in ns>:<n>"
-- ARGV     1 now (µs; empty: the store's clock, read with TIME)  2 limit  3 window (µs)
--          4 burst (unused)  5 cost  6 keep (ms)  7 the ns of now past its µs (0-999;
--          empty: 0)
-- Returns  {allowed 0|1, remaining, retry_after (µs; -1: never), reset (µs)}
-- retry_after is when enough of the oldest units have left the window for a refused
-- request to fit (never when cost exceeds limit); reset is when the newest unit leaves.
-- Both count from now, rounded up to the µs.
--
-- Time to the nanosecond. A unit admitted at t counts while now < t + W, in ns: two
-- requests 199.999777 ms apart on a window of 200 ms are in one window, as they are to
-- the in-process log. Lua's numbers are doubles, exact only below 2^53, so a time is kept
-- in two parts: whole µs since the Unix epoch (the score) and the ns past them (0-999),
-- which the member carries as its last three digits before the colon — the member reads
-- as the time in ns. Members of one score sort by those digits, so the set is in time
-- order to the ns. Members are built with string.format: Lua 5.1 would print a 16-digit
-- number in exponent form and two members would collide.
--
-- Time that goes backwards. The log's clock is the later of now and its newest entry: a
-- caller whose clock is behind is judged, and logged, at the newest time the log holds,
-- so it counts every entry a caller ahead of it counted. Only an admission trims the log,
-- and only at or below its own (newest) time minus W, so no entry a later decision could
-- still count is ever dropped: nothing is credited twice. The key lives for a window after
-- its newest entry plus `keep` (twice the skew of the callers' clocks); the TTL only
-- collects garbage.
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[5])
local keep = tonumber(ARGV[6])
local sub = tonumber(ARGV[7]) or 0

-- The ns past the µs of a member "<µs><ddd>:<n>": its three digits before the colon.
local function ns_of(member)
  local colon = string.find(member, ':', 1, true)
  return tonumber(string.sub(member, colon - 3, colon - 1))
end

local at, at_sub = now, sub
local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local newest_us, newest_sub
if newest[2] then
  newest_us, newest_sub = tonumber(newest[2]), ns_of(newest[1])
  if newest_us > at or (newest_us == at and newest_sub > at_sub) then
    at, at_sub = newest_us, newest_sub
  end
end
-- The window is (at − W, at]: a unit counts when its µs are above the cutoff's, or equal
-- to them with more ns.
local cutoff = at - window
local cutoff_text = string.format('%.0f', cutoff)
local edge = redis.call('ZRANGEBYSCORE', KEYS[1], cutoff_text, cutoff_text)
local edge_in = 0
for _, m in ipairs(edge) do
  if ns_of(m) > at_sub then
    edge_in = edge_in + 1
  end
end
local n = redis.call('ZCOUNT', KEYS[1], '(' .. cutoff_text, '+inf') + edge_in

-- The time from now (µs, ns) until us µs and ns ns plus W, rounded up to the µs.
local function until_gone(us, ns)
  local d = us + window - now
  if ns > sub then
    d = d + 1
  end
  return d
end

if n + cost > limit then
  local reset = 0
  if n > 0 then
    reset = until_gone(newest_us, newest_sub)
  end
  if cost > limit then
    return {0, math.max(limit - n, 0), -1, reset}
  end
  -- The unit whose leaving makes room: the (n + cost − limit)-th oldest in the window,
  -- past the units at the cutoff's µs that have left it.
  local offset = #edge - edge_in + n + cost - limit - 1
  local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], cutoff_text, '+inf', 'WITHSCORES', 'LIMIT', offset, 1)
  return {0, math.max(limit - n, 0), until_gone(tonumber(oldest[2]), ns_of(oldest[1])), reset}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. cutoff_text)
for _, m in ipairs(edge) do
  if ns_of(m) <= at_sub then
    redis.call('ZREM', KEYS[1], m)
  end
end
local score = string.format('%.0f', at)
local stamp = score .. string.format('%03d', at_sub)
for i = 1, cost do
  redis.call('ZADD', KEYS[1], score, stamp .. ':' .. (n + i))
end
local stale = until_gone(at, at_sub)
redis.call('PEXPIRE', KEYS[1], math.ceil(stale / 1000) + keep)
return {1, limit - n - cost, 0, stale}
