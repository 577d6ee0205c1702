-- rlsim fixed window: one counter per window aligned on the Unix clock.
-- KEYS[1]  the counter of the window that holds now (its name carries floor(now/W))
-- ARGV     1 now (µs, unused here)  2 limit  3 window (µs)  4 burst (unused)  5 cost
-- Returns  {allowed 0|1, remaining}
-- All arithmetic stays in integers below 2^53 so Lua's doubles compute it exactly.
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[5])

local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count + cost > limit then
  return {0, limit - count}
end
count = redis.call('INCRBY', KEYS[1], cost)
if count == cost then
  -- First write of this window: the TTL is set in the same atomic step, so a crash can
  -- never leave the counter without one.
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
end
return {1, limit - count}
