-- rlsim PEXPIRE of the non-atomic pattern: the second command, which a crash skips.
-- KEYS[1]  the counter hash of nonatomic_incr.lua
-- ARGV     1 now (µs; empty: the store's clock, read with TIME)  3 window (µs)
--          6 keep (ms); the others unused
-- Returns  {1}, or {0} when the counter does not exist (as PEXPIRE leaves a missing key)
--
-- Time: it stores the expiry as e = now + window on the store's clock, which the first
-- command judges, and gives the key a real TTL of the window plus `keep` only to collect it once
-- it is stale: no decision depends on when that TTL fires.
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local window = tonumber(ARGV[3])
local keep = tonumber(ARGV[6])

if redis.call('EXISTS', KEYS[1]) == 0 then
  return {0}
end
redis.call('HSET', KEYS[1], 'e', string.format('%.0f', now + window))
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000) + keep)
return {1}
