-- The naive fixed window many deployments start with: INCR a counter named by the key
-- alone, EXPIRE it for one window when the INCR created it, and admit while the count
-- stays within the limit. (Run as one script the two commands cannot be split by a crash,
-- which is the notes' warning about sending them one by one.)
--
-- What it gets wrong by design: its window starts at the key's first request, wherever
-- that falls, and lasts as long as the TTL; every request counts, refused ones too, and
-- whatever its cost. And its window is a TTL: on a real Redis, TTLs run on the server's
-- wall clock, not on the run's virtual clock (README.md, "Judge your own limiter").
--
-- KEYS[1]  the request's key          ARGV  1 now (µs)  2 cost  3 limit  4 window (µs)  5 burst
-- Returns  1 (admitted) or 0 (refused): no remaining, no retry-after.
local limit = tonumber(ARGV[3])
local window_s = math.ceil(tonumber(ARGV[4]) / 1000000)

local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('EXPIRE', KEYS[1], window_s)
end
if count > limit then
  return 0
end
return 1
