-- rlsim token lease: a node borrows up to `want` tokens at once from a central token
-- bucket (capacity burst, refilled at limit per window), the token_bucket.lua state.
-- KEYS[1]  hash {t = time of the last grant (µs), s = tokens × window}
-- ARGV     1 now (µs)  2 limit  3 window (µs)  4 burst  5 want
-- Returns  {granted tokens (0..want), remaining whole tokens}
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local want = tonumber(ARGV[5])
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

local granted = math.min(want, math.floor(level / window))
if granted <= 0 then
  return {0, 0}
end
level = level - granted * window
redis.call('HSET', KEYS[1], 't', ARGV[1], 's', level)
redis.call('PEXPIRE', KEYS[1], math.ceil(math.ceil((capacity - level) / limit) / 1000))
return {granted, math.floor(level / window)}
