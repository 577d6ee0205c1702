-- The design notes' token bucket (their consume function) as a script, by rlsim's
-- calling convention. Per key it stores the notes' two numbers, tokens (a float) and
-- updatedAt, and decides a request of cost c as consume does:
--
--   elapsed = now − updatedAt, in seconds
--   tokens  = min(capacity, tokens + elapsed · refillPerSec)
--   tokens < c: refuse, retry after ⌈(c − tokens) / refillPerSec⌉ seconds, store tokens
--   otherwise:  admit, store tokens − c
--
-- with updatedAt = now on both paths, capacity = the burst and refillPerSec = limit /
-- window. The notes do not say how a key starts: full, as rlsim's buckets start. rlsim's
-- built-in variant notes-token-bucket decides as this script does.
--
-- KEYS[1]  the request's key          ARGV  1 now (µs)  2 cost  3 limit  4 window (µs)  5 burst
-- Returns  {1, remaining} when admitted, {0, remaining, retry_after_µs} when refused.
local now = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local capacity = tonumber(ARGV[5])
local refillPerSec = tonumber(ARGV[3]) / (tonumber(ARGV[4]) / 1000000)

local state = redis.call('HMGET', KEYS[1], 'tokens', 'updatedAt')
local tokens = capacity
if state[1] then
  local elapsed = (now - tonumber(state[2])) / 1000000
  tokens = math.min(capacity, tonumber(state[1]) + elapsed * refillPerSec)
end

-- A key left alone until its bucket is full again decides as a missing one (full): the
-- TTL, one window past that, only collects it.
local ttl = math.ceil(capacity / refillPerSec * 1000 + tonumber(ARGV[4]) / 1000)
if tokens < cost then
  local wait = (cost - tokens) / refillPerSec
  redis.call('HSET', KEYS[1], 'tokens', tokens, 'updatedAt', now)
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {0, math.floor(tokens), math.ceil(wait) * 1000000}
end
redis.call('HSET', KEYS[1], 'tokens', tokens - cost, 'updatedAt', now)
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, math.floor(tokens - cost)}
