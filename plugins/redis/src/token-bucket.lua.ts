/**
 * The longest a bucket key lives untouched: past it, a bucket starts full again. Otherwise a
 * bucket lives until it would have refilled to capacity, which for a very slow refill (1e-12
 * tokens a second) is millennia: every such key would stay for good.
 */
export const MAX_BUCKET_TTL_MS = 365 * 24 * 60 * 60 * 1000;

/**
 * One token-bucket take, atomically, in one round trip. KEYS[1] is the bucket
 * hash { tokens, at }; ARGV: capacity, refillPerSecond, cost, now in ms (or -1
 * for the Redis server's clock, shared by every replica). Returns
 * { allowed (0/1), tokens left, retryAfterMs }, the last two as strings at full
 * precision ("inf" for a wait no refill ever ends): a Lua number Redis turns into an
 * integer reply wraps from 2^63, and one passed as a command argument is written as
 * "1e+17", which PEXPIRE refuses. A bucket expires once it would have refilled to
 * capacity, within MAX_BUCKET_TTL_MS: idle keys cost nothing.
 */
export const TOKEN_BUCKET_LUA = `
local capacity = tonumber(ARGV[1])
local refill = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
-- Formatted before anything is written: a script is not rolled back, so a PEXPIRE
-- failing after the HSET would leave a bucket that never expires.
local ttl = string.format('%d', math.min(${MAX_BUCKET_TTL_MS}, math.ceil(capacity / refill * 1000) + 1000))
if now == nil or now < 0 then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = capacity
  at = now
elseif now > at then
  tokens = math.min(capacity, tokens + (now - at) / 1000 * refill)
  at = now
else
  tokens = math.min(capacity, tokens)
end
local allowed = 0
local retry = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  retry = math.ceil((cost - tokens) / refill * 1000)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%.17g', at))
redis.call('PEXPIRE', KEYS[1], ttl)
return { allowed, string.format('%.17g', tokens), string.format('%.17g', retry) }
`;
