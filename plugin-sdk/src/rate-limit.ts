import { AssemblyLineError } from "./errors.js";
import type { RateLimitRequest } from "./infrastructure.js";

/**
 * The checks every RateLimiterStore applies to a take request, so an in-process
 * and a shared store refuse the same bad input the same way. Returns the cost.
 */
export function checkRateLimitRequest(key: string, request: RateLimitRequest): { cost: number } {
  const cost = request.cost ?? 1;
  const fail = (problem: string): never => {
    throw new AssemblyLineError("AL_ERR_RATE_LIMIT_CONFIG", `rate limit for ${JSON.stringify(key)}: ${problem}`, {
      fix: "Use a positive capacity and refillPerSecond, and a positive cost no larger than capacity.",
    });
  };
  if (typeof key !== "string" || key === "") fail("the key must be a non-empty string");
  if (!(Number.isFinite(request.capacity) && request.capacity > 0)) fail(`capacity ${request.capacity} is not positive`);
  if (!(Number.isFinite(request.refillPerSecond) && request.refillPerSecond > 0)) fail(`refillPerSecond ${request.refillPerSecond} is not positive`);
  if (!(Number.isFinite(cost) && cost > 0)) fail(`cost ${cost} is not positive`);
  if (cost > request.capacity) fail(`cost ${cost} exceeds capacity ${request.capacity}, so it could never be taken`);
  if (request.now !== undefined && !(Number.isFinite(request.now) && request.now >= 0)) fail(`now ${request.now} is not a time in ms`);
  return { cost };
}
