-- rlsim token lease: a node borrows up to `want` tokens at once from a central token
-- bucket (capacity burst, refilled at limit per window), the token_bucket.lua state.
-- KEYS[1]  hash {t = the latest time the bucket has seen (ns), s = tokens × window (µs),
--          in thousandths}
-- ARGV     1 now (µs; empty: the store's clock, read with TIME)  2 limit  3 window (µs)
--          4 burst  5 want  6 keep (ms)  7 the ns of now past its µs (0-999; empty: 0)
-- Returns  {granted tokens (0..want), remaining whole tokens, reset (µs)}
-- reset is when the bucket is full again, from now, rounded up to the µs.
--
-- Time that goes backwards: as token_bucket.lua, t = max(t stored, now) and the bucket
-- refills only for time after t, so a caller whose clock is behind is granted from the
-- bucket as it is and never refills an interval twice.
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local want = tonumber(ARGV[5])
local keep = tonumber(ARGV[6])
local sub = tonumber(ARGV[7]) or 0
local capacity = burst * window

-- An integer's decimal text read as its thousands and its last three digits.
local function split(text)
  return tonumber(string.sub(text, 1, -4)) or 0, tonumber(string.sub(text, -3))
end
-- The text of the integer whole·1000 + part.
local function join(whole, part)
  if whole == 0 then
    return tostring(part)
  end
  return string.format('%.0f', whole) .. string.format('%03d', part)
end

local level, frac = capacity, 0 -- token·µs, and thousandths of one
local t, t_sub = now, sub
local state = redis.call('HMGET', KEYS[1], 't', 's')
if state[1] then
  level, frac = split(state[2])
  local last, last_sub = split(state[1])
  if last > now or (last == now and last_sub > sub) then
    t, t_sub = last, last_sub
  end
  local e, e_sub = now - last, sub - last_sub
  if e_sub < 0 then
    e, e_sub = e - 1, e_sub + 1000
  end
  -- Full once the time to refill what is missing has passed; comparing whole µs first
  -- keeps e * limit below capacity + limit, well inside 2^53.
  if e >= math.ceil((capacity - level) / limit) then
    level, frac = capacity, 0
  elseif e >= 0 then
    local part = frac + e_sub * limit
    level = level + e * limit + math.floor(part / 1000)
    frac = part % 1000
    if level >= capacity then
      level, frac = capacity, 0
    end
  end
end

-- The time from now until the bucket holds `need` token·µs from t on, refilling, in µs
-- rounded up: (need − level)·1000 − frac thousandths at limit a ns, split so that no
-- product leaves 2^53.
local function until_level(need)
  local d = need - level
  local q = math.floor(d / limit)
  local ns = t_sub - sub + math.ceil(((d - q * limit) * 1000 - frac) / limit)
  return t - now + q + math.ceil(ns / 1000)
end

local granted = math.min(want, math.floor(level / window))
if granted <= 0 then
  return {0, 0, until_level(capacity)}
end
level = level - granted * window
redis.call('HSET', KEYS[1], 't', join(t, t_sub), 's', join(level, frac))
local full = until_level(capacity)
redis.call('PEXPIRE', KEYS[1], math.ceil(full / 1000) + keep)
return {granted, math.floor(level / window), full}
