-- rlsim fixed window: one counter per window aligned on the Unix clock.
-- KEYS[1]  the counter of the window that holds now (its name carries floor(now/W))
-- ARGV     1 now (µs; empty: the store's clock, read with TIME)  2 limit  3 window (µs)
--          4 burst (unused)  5 cost  6 keep (ms)
-- Returns  {allowed 0|1, remaining, retry_after (µs; -1: never), reset (µs)}
-- retry_after is the time to the next window, when a refused request fits again (never
-- when cost exceeds limit); reset is the time to the next window while the counter holds
-- anything, else 0. Both count from now.
--
-- Time that goes backwards. A caller counts in the window its clock is in, under that
-- window's own name: a caller whose clock is behind finds its window's counter with every
-- unit already counted in it, so a step back never empties a window. The counter lives
-- until its window has ended plus `keep`, which must cover the widest gap between the
-- clocks of the callers (twice the skew of node clocks): until then no reader can still be
-- in the window, and a missing counter and a stale one decide alike. The TTL only
-- collects garbage; no decision depends on when it fires.
-- All arithmetic stays in integers below 2^53 so Lua's doubles compute it exactly.
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[5])
local keep = tonumber(ARGV[6])

local stale = (math.floor(now / window) + 1) * window

local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count + cost > limit then
  local retry = stale - now
  if cost > limit then
    retry = -1
  end
  local reset = 0
  if count > 0 then
    reset = stale - now
  end
  return {0, limit - count, retry, reset}
end
count = redis.call('INCRBY', KEYS[1], cost)
if count == cost then
  -- First write of this window: the TTL is set in the same atomic step, so a crash can
  -- never leave the counter without one.
  redis.call('PEXPIRE', KEYS[1], math.ceil((stale - now) / 1000) + keep)
end
return {1, limit - count, 0, stale - now}
