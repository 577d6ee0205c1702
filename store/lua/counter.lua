-- rlsim counter: one of the window counters of a shared form of several, every one of
-- which must admit (store/counters.go). Kong's rate-limiting plugin with policy=redis and
-- sync_rate -1 runs it so, as kong/plugins/rate-limiting/policies/init.lua (3.9.1) does:
-- the plugin's usage() INCRs the counter of the period's window, EXPIREs it when that
-- created it, and reads the count before; every request is counted, admitted or not. The
-- plugin sends one such call per configured period and refuses when any period is over.
-- KEYS[1]  the counter of the period's window that holds now (its name carries the
--          window's start, UTC-calendar-aligned, from the caller's clock)
-- ARGV     1 now (µs; empty: the store's clock, read with TIME)  2 limit  3 the counter's
--          TTL (µs: the period's length, 30 days for a month, 365 for a year)
--          4 burst (unused)  5 cost  6 keep (ms)
-- Returns  {allowed 0|1, limit - count (below 0 once the count passes the limit),
--          retry_after (µs; -1: never), reset (µs)}: passes when the count, this request's
--          cost in it, is within limit. retry_after and reset count to the end of the TTL's
--          own multiple of now, which is the window's end for periods of a fixed length;
--          a caller of a calendar period reads only the first two.
--
-- Time that goes backwards. A caller counts in the window its clock is in, under that
-- window's own name, as the plugin does: a caller whose clock is behind finds its window's
-- counter with every request already counted in it. The counter lives the plugin's TTL
-- from its creation plus `keep`; a period of a fixed length has moved on to a new name by
-- then, and a month's or a year's counter that expires inside its window starts over, as
-- the plugin's does (on a real server its TTL runs on the server's own clock).
-- All arithmetic stays in integers below 2^53 so Lua's doubles compute it exactly.
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local cost = tonumber(ARGV[5])
local keep = tonumber(ARGV[6])

local stale = (math.floor(now / ttl) + 1) * ttl

local count = redis.call('INCRBY', KEYS[1], cost)
if count == cost then
  redis.call('PEXPIRE', KEYS[1], math.ceil(ttl / 1000) + keep)
end
if count > limit then
  local retry = stale - now
  if cost > limit then
    retry = -1
  end
  return {0, limit - count, retry, stale - now}
end
return {1, limit - count, 0, stale - now}
