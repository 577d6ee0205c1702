-- rlsim token bucket: capacity burst, refilled at limit per window, lazily.
-- KEYS[1]  hash {t = the latest time the bucket has seen (ns), s = tokens × window (µs),
--          in thousandths}
-- ARGV     1 now (µs; empty: the store's clock, read with TIME)  2 limit  3 window (µs)
--          4 burst  5 cost  6 keep (ms)  7 the ns of now past its µs (0-999; empty: 0)
-- Returns  {allowed 0|1, remaining whole tokens, retry_after (µs; -1: never), reset (µs)}
-- retry_after is when a refused request's tokens will be there if nothing else is
-- admitted (never when cost exceeds burst); reset is when the bucket is full again.
-- Both count from now, rounded up to the µs.
-- Tokens are kept scaled by the window (token·µs) so refilling limit/window tokens per µs
-- adds exactly `limit` per µs, and every ns a thousandth of that: the level is a whole
-- part and thousandths, the time whole µs and ns, every part an integer below 2^53 and
-- exact in Lua's doubles. Stored, each pair is one integer's decimal text (s·1000 + f,
-- the time in ns), which Redis keeps as an integer; the script reads it in two parts,
-- its last three digits apart, since a double cannot hold it whole.
--
-- Time that goes backwards. The bucket's clock is t = max(t stored, now): it refills only
-- for time after t, and a caller whose clock is behind spends from the bucket as it is,
-- with no refill and without moving t back, so no interval is ever credited twice. Over
-- any window W the fleet can take at most burst + limit·(W + 2·skew)/W tokens when node
-- clocks spread over ±skew. The key lives until the bucket is full again in t's terms
-- plus `keep` (twice the skew): a missing bucket reads full, so the TTL only collects
-- garbage and no decision depends on when it fires.
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

if cost * window > level then
  -- A refused request changes nothing, as golang.org/x/time/rate leaves its state. The
  -- bucket refills from t on.
  local retry = -1
  if cost <= burst then
    retry = until_level(cost * window)
  end
  return {0, math.floor(level / window), retry, until_level(capacity)}
end
level = level - cost * window
redis.call('HSET', KEYS[1], 't', join(t, t_sub), 's', join(level, frac))
local full = until_level(capacity)
redis.call('PEXPIRE', KEYS[1], math.ceil(full / 1000) + keep)
return {1, math.floor(level / window), 0, full}
