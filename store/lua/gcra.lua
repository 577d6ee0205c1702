-- rlsim GCRA: one theoretical arrival time per key (as redis-cell and redis_rate).
-- KEYS[1]  tat: its time in ns, then ":" and the L-ths of a ns past it when there are any
-- ARGV     1 now (µs; empty: the store's clock, read with TIME)  2 limit  3 window (µs)
--          4 burst  5 cost  6 keep (ms)  7 the ns of now past its µs (0-999; empty: 0)
-- Returns  {allowed 0|1, remaining, retry_after (µs; -1: never), reset (µs)}
-- retry_after is the time until a refused request's allow_at (never when cost exceeds
-- burst); reset is the time until tat, when the key is as if unseen. Both count from now,
-- rounded up to the µs.
-- The emission interval T is window/limit exactly, as the in-process GCRA keeps it: a
-- time is whole µs and the L-ths of a ns past them (0 <= r < 1000·limit), each part an
-- integer below 2^53 and exact in Lua's doubles, so no rounding accumulates however many
-- units are admitted (1 s / 3 is 333333 µs and 333 1/3 ns).
--
-- Time that goes backwards. The schedule starts from max(tat, now): a caller whose clock
-- is behind the stored tat is judged against the schedule as it stands and can only be
-- refused sooner, never credited for time it has not seen. The key lives until tat plus
-- `keep` (twice the skew of the callers' clocks): after tat a missing key and a stale one
-- decide alike, so the TTL only collects garbage.
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
local sub = tonumber(ARGV[7]) or 0
local unit = 1000 * limit -- L-ths of a ns in a µs

-- (us, r) with r brought into [0, unit).
local function norm(us, r)
  local carry = math.floor(r / unit)
  return us + carry, r - carry * unit
end
local function minus(a, ar, b, br)
  return norm(a - b, ar - br)
end
local function before(a, ar, b, br)
  return a < b or (a == b and ar < br)
end
-- c·T: T is ⌊window/limit⌋ µs and (window mod limit)·1000 L-ths of a ns.
local t_us = math.floor(window / limit)
local t_r = (window - t_us * limit) * 1000
local function times(c)
  return norm(c * t_us, c * t_r)
end
-- A span rounded up to the µs.
local function ceil_us(us, r)
  if r > 0 then
    return us + 1
  end
  return us
end
-- The whole units of T in a span (0 for a negative one): ⌊(us·1000·limit + r)/(1000·window)⌋,
-- worked out as ⌊(us·limit + ⌊r/1000⌋)/window⌋ to keep the products small.
local function units(us, r)
  if us < 0 then
    return 0
  end
  return math.floor((us * limit + math.floor(r / 1000)) / window)
end

local n, nr = now, sub * limit
local tat, tat_r = n, nr
local stored = redis.call('GET', KEYS[1])
if stored then
  local ns, frac = string.match(stored, '^(%d+):?(%d*)$')
  local us = tonumber(string.sub(ns, 1, -4)) or 0
  local r = tonumber(string.sub(ns, -3)) * limit + (tonumber(frac) or 0)
  if before(n, nr, us, r) then
    tat, tat_r = us, r
  end
end
-- A cost above burst is refused whatever the schedule; burst + 1 decides it alike and
-- keeps c·T small.
local c_us, c_r = times(math.min(cost, burst + 1))
local new, new_r = norm(tat + c_us, tat_r + c_r)
local tol, tol_r = times(burst)
local allow, allow_r = minus(new, new_r, tol, tol_r)
if before(n, nr, allow, allow_r) then
  local retry = -1
  if cost <= burst then
    retry = ceil_us(minus(allow, allow_r, n, nr))
  end
  local since, since_r = minus(tat, tat_r, tol, tol_r)
  return {0, units(minus(n, nr, since, since_r)), retry, ceil_us(minus(tat, tat_r, n, nr))}
end
local ns_part = math.floor(new_r / limit)
local text = string.format('%.0f', new) .. string.format('%03d', ns_part)
if new == 0 then
  text = tostring(ns_part)
end
if new_r > ns_part * limit then
  text = text .. ':' .. string.format('%.0f', new_r - ns_part * limit)
end
local reset = ceil_us(minus(new, new_r, n, nr))
redis.call('SET', KEYS[1], text, 'PX', math.ceil(reset / 1000) + keep)
return {1, units(minus(n, nr, allow, allow_r)), 0, reset}
