export { RedisRateLimiterStore, redisRateLimiterStore, type RedisRateLimiterStoreOptions } from "./redis-rate-limiter-store.js";
export { TOKEN_BUCKET_LUA } from "./token-bucket.lua.js";
