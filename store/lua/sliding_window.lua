-- rlsim two-counter sliding window (the design notes' script, cost-aware and in integers).
-- KEYS[1]  counter of the previous window   KEYS[2]  counter of the current window
--          (their names carry the window indexes of now)
-- ARGV     1 now (µs; empty: the store's clock, read with TIME)  2 limit  3 window (µs)
--          4 burst (unused)  5 cost  6 keep (ms)  7 the ns of now past its µs (0-999;
--          empty: 0)
-- Returns  {allowed 0|1, remaining, retry_after (µs; -1: never), reset (µs)}
-- It admits iff prev·(1 − elapsed/W) + curr + cost <= limit, with elapsed to the ns,
-- multiplied through by W so every product is an integer below 2^53 and Lua's doubles
-- compute it exactly: over, the excess at the µs of now in count·µs, is set against the
-- weight prev loses in the ns past that µs, prev·ns/1000.
-- retry_after is the first whole µs at which a refused request fits if nothing else is
-- admitted — later in this window as prev's weight decays, or in the next, where curr
-- becomes prev — and never when cost exceeds limit; reset is the time until both counters
-- stop counting (the end of the next window while curr holds anything, else of this one
-- while prev does, else 0). Both count from now's µs: the ns past it can only make them a
-- little long.
--
-- Time that goes backwards. A caller reads the two windows its own clock is in, under
-- their own names: a caller whose clock is behind finds them holding every unit counted
-- in them, so a step back never empties a window. A counter lives until the end of the
-- window after its own (when it stops being "previous") plus `keep`, which must cover the
-- widest gap between the callers' clocks (twice the skew of node clocks); the TTL only
-- collects garbage, no decision depends on when it fires.
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[5])
local keep = tonumber(ARGV[6])
local sub = tonumber(ARGV[7]) or 0
local start = math.floor(now / window) * window
local elapsed = now - start

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

local function reset(c)
  if c > 0 then
    return 2 * window - elapsed
  elseif prev > 0 then
    return window - elapsed
  end
  return 0
end

-- The request fits iff over·1000 <= prev·sub; over >= prev cannot (sub < 1000), and
-- testing it first keeps over·1000 small.
local over = carried + (curr + cost) * window - limit * window
if over > 0 and (over >= prev or over * 1000 > prev * sub) then
  if cost > limit then
    return {0, remaining(curr), -1, reset(curr)}
  end
  -- Here: prev·(W − e) <= (limit − curr − cost)·W from e = W − ⌊room/prev⌋ on.
  local room = (limit - curr - cost) * window
  if room >= 0 and prev > 0 then
    local e = window - math.floor(room / prev)
    if e < window then
      return {0, remaining(curr), e - elapsed, reset(curr)}
    end
  end
  -- In the next window, curr weighs as prev: curr·(W − e) <= (limit − cost)·W.
  local e = 0
  if curr > 0 then
    e = math.max(window - math.floor((limit - cost) * window / curr), 0)
  end
  return {0, remaining(curr), window - elapsed + e, reset(curr)}
end
curr = redis.call('INCRBY', KEYS[2], cost)
if curr == cost then
  -- The current counter is read again as "previous" during the next window.
  local stale = start + 2 * window
  redis.call('PEXPIRE', KEYS[2], math.ceil((stale - now) / 1000) + keep)
end
return {1, remaining(curr), 0, reset(curr)}
