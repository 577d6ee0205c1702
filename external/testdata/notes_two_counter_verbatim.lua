-- The design notes' two-counter sliding window as the notes call it, unchanged: the
-- previous window's counter in KEYS[1], the current window's in KEYS[2]; ARGV[1] the
-- limit, ARGV[2] the window in seconds, ARGV[3] the elapsed fraction of the current window.
local prev = tonumber(redis.call('GET', KEYS[1]) or '0')
local curr = tonumber(redis.call('GET', KEYS[2]) or '0')
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local elapsed = tonumber(ARGV[3])

local estimated = prev * (1 - elapsed) + curr
if estimated >= limit then
  return {0, limit, 0}
end

curr = redis.call('INCR', KEYS[2])
if curr == 1 then
  redis.call('EXPIRE', KEYS[2], window * 2)
end
return {1, limit, math.floor(limit - estimated - 1)}
