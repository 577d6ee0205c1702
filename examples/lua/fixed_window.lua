-- A fixed window written to rlsim's calling convention (README.md, "Judge your own
-- limiter"): one counter per window aligned on the Unix clock, named by the window's
-- index, and a request admitted iff its cost still fits under the limit. It decides as
-- rlsim's built-in fixed-window does, request for request.
--
-- KEYS[1]  the request's key          ARGV  1 now (µs)  2 cost  3 limit  4 window (µs)  5 burst
-- Returns  {1, remaining} when admitted, {0, remaining, retry_after_µs} when refused
--          (retry_after -1: the cost exceeds the limit and can never pass).
local now = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local window = tonumber(ARGV[4])

local index = math.floor(now / window)
local counter = KEYS[1] .. ':' .. index
local window_end = (index + 1) * window

local count = tonumber(redis.call('GET', counter) or '0')
if count + cost > limit then
  local retry = window_end - now
  if cost > limit then
    retry = -1
  end
  return {0, limit - count, retry}
end
count = redis.call('INCRBY', counter, cost)
if count == cost then
  -- The counter is read only inside its window; the TTL (one window past its end) only
  -- collects it, so no decision depends on when it fires.
  redis.call('PEXPIRE', counter, math.ceil((window_end - now + window) / 1000))
end
return {1, limit - count}
