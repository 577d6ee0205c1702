-- rlsim token lease: a node borrows up to `want` tokens at once from a central token
-- bucket (capacity burst, refilled at limit per window), the token_bucket.lua state.
-- KEYS[1]  hash {t = the latest time the bucket has seen (µs), s = tokens × window}
-- ARGV     1 now (µs; empty: the store's clock, read with TIME)  2 limit  3 window (µs)
--          4 burst  5 want  6 keep (ms)
-- Returns  {granted tokens (0..want), remaining whole tokens, reset (µs)}
-- reset is when the bucket is full again, from now.
--
-- Time that goes backwards: as token_bucket.lua, t = max(t stored, now) and the bucket
-- refills only for time after t, so a caller whose clock is behind is granted from the
-- bucket as it is and never refills an interval twice.
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local want = tonumber(ARGV[5])
local keep = tonumber(ARGV[6])
local capacity = burst * window

local level = capacity
local t = now
local state = redis.call('HMGET', KEYS[1], 't', 's')
if state[1] then
  level = tonumber(state[2])
  local last = tonumber(state[1])
  if last > now then
    t = last
  end
  local elapsed = now - last
  if elapsed >= math.ceil((capacity - level) / limit) then
    level = capacity
  elseif elapsed > 0 then
    level = level + elapsed * limit
  end
end

local granted = math.min(want, math.floor(level / window))
if granted <= 0 then
  return {0, 0, t + math.ceil((capacity - level) / limit) - now}
end
level = level - granted * window
redis.call('HSET', KEYS[1], 't', string.format('%.0f', t), 's', string.format('%.0f', level))
local full = t + math.ceil((capacity - level) / limit)
redis.call('PEXPIRE', KEYS[1], math.ceil((full - now) / 1000) + keep)
return {granted, math.floor(level / window), full - now}
