import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stageDeployBundle } from "@assemblyline-agents/core/deploy";
import { buildAgent } from "@assemblyline-agents/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { pruneModulesCache } from "../plugin-sdk/src/deploy/modules-cache.js";
import { copyExample } from "./support/example-copy.js";

const HOUR_MS = 60 * 60_000;
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function cacheDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "al-modules-cache-"));
  roots.push(dir);
  return dir;
}

/** A cached copy (or any folder) last used `ageMs` ago. */
function folder(cache: string, name: string, ageMs: number): void {
  mkdirSync(join(cache, name, "node_modules"), { recursive: true });
  const at = new Date(Date.now() - ageMs);
  utimesSync(join(cache, name), at, at);
}

const digest = (n: number) => n.toString(16).padStart(16, "0");

describe("the deploy bundles' package cache", () => {
  it("keeps the copy in use, the three most recently used and any used within the hour; removes the rest and old staging leftovers", async () => {
    const cache = cacheDir();
    for (let n = 1; n <= 6; n++) folder(cache, digest(n), n * 2 * HOUR_MS); // 1 newest ... 6 oldest, all past the hour
    folder(cache, digest(7), 10 * 60_000); // used 10 minutes ago, beyond the newest three
    folder(cache, digest(8), 30 * 24 * HOUR_MS); // the one this deploy uses, untouched for a month
    folder(cache, `${digest(9)}.staging-ab12`, 3 * HOUR_MS); // a crashed deploy's staging
    folder(cache, `${digest(10)}.staging-cd34`, 60_000); // a deploy staging now
    folder(cache, "notes", 40 * 24 * HOUR_MS); // not the cache's
    writeFileSync(join(cache, digest(11)), "a file, not a copy");

    const removed = await pruneModulesCache(cache, digest(8));

    expect(removed.sort()).toEqual([digest(3), digest(4), digest(5), digest(6), `${digest(9)}.staging-ab12`].sort());
    expect(readdirSync(cache).sort()).toEqual([digest(1), digest(2), digest(7), digest(8), `${digest(10)}.staging-cd34`, digest(11), "notes"].sort());
  });

  it("is pruned by each deploy's staging, which marks the copy it reuses as used", async () => {
    const { agentDir, root } = copyExample();
    roots.push(root);
    await buildAgent(agentDir);
    const cache = cacheDir();
    const first = await stageDeployBundle({ artifactRoot: join(agentDir, ".assembly-line"), outDir: join(root, "out-1"), modulesCache: cache });
    // Copies of earlier dependency sets, last used days ago, and this one as if last used a week ago.
    for (let n = 1; n <= 4; n++) folder(cache, digest(n), n * 24 * HOUR_MS);
    const weekAgo = new Date(Date.now() - 7 * 24 * HOUR_MS);
    utimesSync(first.modules.dir, weekAgo, weekAgo);

    const second = await stageDeployBundle({ artifactRoot: join(agentDir, ".assembly-line"), outDir: join(root, "out-2"), modulesCache: cache });

    expect(second.modules.digest).toBe(first.modules.digest);
    expect(existsSync(join(second.modules.dir, second.cli))).toBe(true);
    // Reused, so marked as used now: it is the newest, then the two newest of the others are kept.
    expect(readdirSync(cache).sort()).toEqual([first.modules.digest, digest(1), digest(2)].sort());
  }, 600_000);
});
