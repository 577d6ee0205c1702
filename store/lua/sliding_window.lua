-- rlsim two-counter sliding window (the design notes' script, cost-aware and in integers).
-- KEYS[1]  counter of the previous window   KEYS[2]  counter of the current window
-- ARGV     1 now (µs)  2 limit  3 window (µs)  4 burst (unused)  5 cost
-- Returns  {allowed 0|1, remaining}
-- It admits iff prev·(1 − elapsed/W) + curr + cost <= limit, multiplied through by W so
-- every product is an integer below 2^53 and Lua's doubles compute it exactly.
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[5])
local elapsed = now - math.floor(now / window) * window

local prev = tonumber(redis.call('GET', KEYS[1]) or '0')
local curr = tonumber(redis.call('GET', KEYS[2]) or '0')
local carried = prev * (window - elapsed)

local function remaining(c)
  local room = limit * window - carried - c * window
  if room < 0 then
    return 0
  end
  return math.floor(room / window)
end

if carried + (curr + cost) * window > limit * window then
  return {0, remaining(curr)}
end
curr = redis.call('INCRBY', KEYS[2], cost)
if curr == cost then
  -- The current counter is read again as "previous" during the next window: keep it for
  -- two windows from its first write.
  redis.call('PEXPIRE', KEYS[2], 2 * math.ceil(window / 1000))
end
return {1, remaining(curr)}
