-- rlsim token bucket: capacity burst, refilled at limit per window, lazily.
-- KEYS[1]  hash {t = time of the last admission (µs), s = tokens × window}
-- ARGV     1 now (µs)  2 limit  3 window (µs)  4 burst  5 cost
-- Returns  {allowed 0|1, remaining whole tokens}
-- Tokens are kept scaled by the window (token·µs) so refilling limit/window tokens per µs
-- adds exactly `limit` per µs: all integers below 2^53, exact in Lua's doubles.
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local cost = tonumber(ARGV[5])
local capacity = burst * window

local level = capacity
local state = redis.call('HMGET', KEYS[1], 't', 's')
if state[1] then
  level = tonumber(state[2])
  local elapsed = now - tonumber(state[1])
  -- Full once the time to refill what is missing has passed; comparing times first
  -- keeps elapsed * limit below capacity + limit, well inside 2^53.
  if elapsed >= math.ceil((capacity - level) / limit) then
    level = capacity
  elseif elapsed > 0 then
    level = level + elapsed * limit
  end
end

if cost * window > level then
  -- A refused request changes nothing, as golang.org/x/time/rate leaves its state.
  return {0, math.floor(level / window)}
end
level = level - cost * window
redis.call('HSET', KEYS[1], 't', ARGV[1], 's', level)
-- Expire when the bucket is full again: a missing key reads as full, so nothing changes.
redis.call('PEXPIRE', KEYS[1], math.ceil(math.ceil((capacity - level) / limit) / 1000))
return {1, math.floor(level / window)}
