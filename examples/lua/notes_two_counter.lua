-- The design notes' two-counter sliding window, as the notes write it, run by rlsim's
-- calling convention.
--
-- The notes' script reads KEYS[1] = the previous window's counter, KEYS[2] = the current
-- window's, ARGV[1] = the limit, ARGV[2] = the window in seconds and ARGV[3] = the elapsed
-- fraction of the current window. The first block below computes those from rlsim's
-- arguments (KEYS[1] = the request's key; ARGV 1 now (µs), 2 cost, 3 limit, 4 window (µs),
-- 5 burst) into locals of the same names, so the second block is the notes' code
-- unchanged: it refuses once the estimate has reached the limit, counts every request
-- as 1 whatever its cost, and expires the current counter after two windows.
--
-- Its replies are the notes' too: {0, limit, 0} and {1, limit, remaining}. rlsim reads an
-- array as {allowed, remaining, retry_after_µs}, so it is told remaining = limit, and a
-- refusal with no time to come back (0). Only the first element decides; every figure of
-- a report comes from it. rlsim's built-in variant notes-sliding-window decides as this
-- script does.

-- rlsim's convention → the notes' KEYS and ARGV.
local now = tonumber(ARGV[1])
local window_us = tonumber(ARGV[4])
local index = math.floor(now / window_us)
local KEYS = {KEYS[1] .. ':' .. (index - 1), KEYS[1] .. ':' .. index}
local ARGV = {ARGV[3], window_us / 1000000, (now - index * window_us) / window_us}

-- The notes' script.
local prev = tonumber(redis.call('GET', KEYS[1]) or '0')
local curr = tonumber(redis.call('GET', KEYS[2]) or '0')
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local elapsed = tonumber(ARGV[3])

local estimated = prev * (1 - elapsed) + curr
if estimated >= limit then
  return {0, limit, 0}
end

curr = redis.call('INCR', KEYS[2])
if curr == 1 then
  redis.call('EXPIRE', KEYS[2], window * 2)
end
return {1, limit, math.floor(limit - estimated - 1)}
