-- rlsim token bucket: capacity burst, refilled at limit per window, lazily.
-- KEYS[1]  hash {t = the latest time the bucket has seen (µs), s = tokens × window}
-- ARGV     1 now (µs; empty: the store's clock, read with TIME)  2 limit  3 window (µs)
--          4 burst  5 cost  6 keep (ms)
-- Returns  {allowed 0|1, remaining whole tokens, retry_after (µs; -1: never), reset (µs)}
-- retry_after is when a refused request's tokens will be there if nothing else is
-- admitted (never when cost exceeds burst); reset is when the bucket is full again.
-- Both count from now.
-- Tokens are kept scaled by the window (token·µs) so refilling limit/window tokens per µs
-- adds exactly `limit` per µs: all integers below 2^53, exact in Lua's doubles.
--
-- Time that goes backwards. The bucket's clock is t = max(t stored, now): it refills only
-- for time after t, and a caller whose clock is behind spends from the bucket as it is,
-- with no refill and without moving t back, so no interval is ever credited twice. Over
-- any window W the fleet can take at most burst + limit·(W + 2·skew)/W tokens when node
-- clocks spread over ±skew. The key lives until the bucket is full again in t's terms
-- plus `keep` (twice the skew): a missing bucket reads full, so the TTL only collects
-- garbage and no decision depends on when it fires.
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
  -- Full once the time to refill what is missing has passed; comparing times first
  -- keeps elapsed * limit below capacity + limit, well inside 2^53.
  if elapsed >= math.ceil((capacity - level) / limit) then
    level = capacity
  elseif elapsed > 0 then
    level = level + elapsed * limit
  end
end

if cost * window > level then
  -- A refused request changes nothing, as golang.org/x/time/rate leaves its state. The
  -- bucket refills from t on.
  local retry = -1
  if cost <= burst then
    retry = t - now + math.ceil((cost * window - level) / limit)
  end
  return {0, math.floor(level / window), retry, t + math.ceil((capacity - level) / limit) - now}
end
level = level - cost * window
redis.call('HSET', KEYS[1], 't', string.format('%.0f', t), 's', string.format('%.0f', level))
local full = t + math.ceil((capacity - level) / limit)
redis.call('PEXPIRE', KEYS[1], math.ceil((full - now) / 1000) + keep)
return {1, math.floor(level / window), 0, full - now}
