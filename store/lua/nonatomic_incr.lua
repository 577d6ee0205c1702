-- rlsim INCRBY of the non-atomic pattern, with Redis's expiry on the store's clock.
-- The pattern the notes warn against is two commands: INCRBY the counter, then PEXPIRE it
-- when the first created it. This script is the first command (nonatomic_expire.lua the
-- second). It keeps the expiry PEXPIRE would set as a virtual timestamp beside the count,
-- so a decision never depends on the wall clock of the server that runs it.
-- KEYS[1]  hash {c = count, e = expiry (µs), once the second command has run}
-- ARGV     1 now (µs; empty: the store's clock, read with TIME)  5 cost; the others unused
-- Returns  {count after adding cost}
--
-- Time: a counter is gone, as an expired key is, once the store's clock reaches e, and
-- INCRBY then starts it afresh. `now` is the store's clock, which never steps back, and
-- an earlier now (e not reached) never expires anything. A counter without e (the second
-- command never ran) never expires.
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local cost = tonumber(ARGV[5])

local e = redis.call('HGET', KEYS[1], 'e')
if e and tonumber(e) <= now then
  redis.call('DEL', KEYS[1])
end
return {redis.call('HINCRBY', KEYS[1], 'c', cost)}
