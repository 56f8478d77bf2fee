import { Redis } from "ioredis";

/** The Redis the suites run against: REDIS_URL, else the local one. */
export const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/**
 * Why the real Redis cannot be reached, or undefined when it answers. Required in CI (it throws there);
 * elsewhere the reason is printed and the suite named `what` is skipped.
 */
export async function redisUnreachable(what: string): Promise<string | undefined> {
  const probe = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 });
  let cause: string | undefined;
  probe.on("error", (error: Error) => (cause = error.message));
  let unreachable: string | undefined;
  try {
    await probe.connect();
    await probe.ping();
  } catch (error) {
    unreachable = cause ?? (error as Error).message;
  } finally {
    probe.disconnect();
  }
  if (unreachable && process.env.CI) throw new Error(`Redis at ${redisUrl} is required in CI and is not reachable: ${unreachable}`);
  if (unreachable) console.log(`skipping ${what}: Redis at ${redisUrl} is not reachable (${unreachable}); start one or set REDIS_URL`);
  return unreachable;
}
