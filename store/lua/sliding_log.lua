-- rlsim sliding log: every admitted unit's timestamp in a sorted set (exact, costly).
-- KEYS[1]  sorted set, score = time (µs), member = "<time>:<n>"
-- ARGV     1 now (µs)  2 limit  3 window (µs)  4 burst (unused)  5 cost
-- Returns  {allowed 0|1, remaining}
-- Members are built from ARGV[1] as a string: Lua 5.1 would print a 16-digit number in
-- exponent form and two members would collide.
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[5])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n + cost > limit then
  return {0, math.max(limit - n, 0)}
end
for i = 1, cost do
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[1] .. ':' .. (n + i))
end
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return {1, limit - n - cost}
