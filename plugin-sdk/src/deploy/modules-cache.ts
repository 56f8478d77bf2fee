import { readdir, rm, stat, utimes } from "node:fs/promises";
import { join } from "node:path";

/**
 * The deploy bundles' package copies, one folder per dependency digest, are
 * about 200 MB each, and a workspace package's rebuild makes a new digest: left
 * alone, the cache grew by a copy per rebuild and deploy. Each staging marks the
 * copy it uses, then removes every other copy beyond the most recently used few,
 * unless it was used within the last hour (a deploy in another process may
 * still be reading it: a release copies from it after staging).
 */
export const MODULES_CACHE_KEEP = 3;
export const MODULES_CACHE_GRACE_MS = 60 * 60_000;

/** A copy's folder is named by its 16-hex-digit digest; a staging folder by that and `.staging-<random>`. */
const COPY = /^[0-9a-f]{16}$/;
const STAGING = /^[0-9a-f]{16}\.staging-[0-9a-f]+$/;

/** Mark a cached copy as used now (its folder's modification time is its last use). */
export async function markModulesCopyUsed(copyDir: string, now = new Date()): Promise<void> {
  await utimes(copyDir, now, now).catch(() => undefined);
}

/**
 * Remove the cache's copies beyond the `MODULES_CACHE_KEEP` most recently used
 * that no deploy used within `MODULES_CACHE_GRACE_MS`, and staging folders a
 * crashed deploy left that long ago. Never `inUse`. Best effort: a copy another
 * process removes first, or one that cannot be removed, is left to the next deploy.
 * Returns the folder names it removed.
 */
export async function pruneModulesCache(cacheDir: string, inUse: string, now = Date.now()): Promise<string[]> {
  const names = await readdir(cacheDir).catch(() => [] as string[]);
  const entries = (
    await Promise.all(
      names
        .filter((name) => COPY.test(name) || STAGING.test(name))
        .map(async (name) => {
          const stats = await stat(join(cacheDir, name)).catch(() => undefined);
          return stats?.isDirectory() ? { name, usedMs: stats.mtimeMs, staging: STAGING.test(name) } : undefined;
        }),
    )
  ).filter((entry) => entry !== undefined);
  const copies = entries.filter((entry) => !entry.staging).sort((a, b) => b.usedMs - a.usedMs);
  const kept = new Set([inUse, ...copies.slice(0, MODULES_CACHE_KEEP).map((entry) => entry.name)]);
  const stale = entries.filter((entry) => !kept.has(entry.name) && now - entry.usedMs > MODULES_CACHE_GRACE_MS);
  const removed: string[] = [];
  for (const entry of stale) {
    const ok = await rm(join(cacheDir, entry.name), { recursive: true, force: true }).then(
      () => true,
      () => false,
    );
    if (ok) removed.push(entry.name);
  }
  return removed;
}
