/**
 * One token-bucket take, atomically, in one round trip. KEYS[1] is the bucket
 * hash { tokens, at }; ARGV: capacity, refillPerSecond, cost, now in ms (or -1
 * for the Redis server's clock, shared by every replica). Returns
 * { allowed (0/1), tokens left (string, full precision), retryAfterMs }.
 * A bucket expires once it would have refilled to capacity: idle keys cost nothing.
 */
export const TOKEN_BUCKET_LUA = `
local capacity = tonumber(ARGV[1])
local refill = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
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
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / refill * 1000) + 1000)
return { allowed, string.format('%.17g', tokens), retry }
`;
