-- rlsim GCRA: one theoretical arrival time per key (as redis-cell and redis_rate).
-- KEYS[1]  tat (µs)
-- ARGV     1 now (µs; empty: the store's clock, read with TIME)  2 limit  3 window (µs)
--          4 burst  5 cost  6 keep (ms)
-- Returns  {allowed 0|1, remaining, retry_after (µs; -1: never), reset (µs)}
-- retry_after is the time until a refused request's allow_at (never when cost exceeds
-- burst); reset is the time until tat, when the key is as if unseen. Both count from now.
-- The emission interval T is floor(window/limit) µs, so every time is a whole µs.
--
-- Time that goes backwards. The schedule starts from max(tat, now): a caller whose clock
-- is behind the stored tat is judged against the schedule as it stands and can only be
-- refused sooner, never credited for time it has not seen. The key lives until tat plus
-- `keep` (twice the skew of the callers' clocks): after tat a missing key and a stale one
-- decide alike, so the TTL only collects garbage.
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local cost = tonumber(ARGV[5])
local keep = tonumber(ARGV[6])
local interval = math.floor(window / limit)
local tolerance = burst * interval

local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then
  tat = now
end
local new_tat = tat + cost * interval
local allow_at = new_tat - tolerance
if now < allow_at then
  local retry = allow_at - now
  if cost > burst then
    retry = -1
  end
  return {0, math.max(math.floor((now - (tat - tolerance)) / interval), 0), retry, tat - now}
end
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + keep)
return {1, math.floor((now - allow_at) / interval), 0, new_tat - now}
