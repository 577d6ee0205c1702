-- rlsim GCRA: one theoretical arrival time per key (as redis-cell and redis_rate).
-- KEYS[1]  tat (µs)
-- ARGV     1 now (µs)  2 limit  3 window (µs)  4 burst  5 cost
-- Returns  {allowed 0|1, remaining}
-- The emission interval T is floor(window/limit) µs, so every time is a whole µs.
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local cost = tonumber(ARGV[5])
local interval = math.floor(window / limit)
local tolerance = burst * interval

local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then
  tat = now
end
local new_tat = tat + cost * interval
local allow_at = new_tat - tolerance
if now < allow_at then
  return {0, math.floor((now - (tat - tolerance)) / interval)}
end
-- The key lives until tat: after that a missing key and a stale one decide alike.
redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil((new_tat - now) / 1000))
return {1, math.floor((now - allow_at) / interval)}
