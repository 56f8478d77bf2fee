import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sourceFileHash } from "@assemblyline-agents/core";
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

/** Another user of the machine (nobody). */
const OTHER_USER = 65534;
const asRoot = process.getuid?.() === 0;
const REAL_CLI = "// the real CLI\n";

/** A built agent (manifest by hand) in a project whose only package is an installed @assemblyline-agents/node: stages in milliseconds. */
function handBuiltAgent(): { root: string; artifactRoot: string } {
  const root = mkdtempSync(join(tmpdir(), "al-modules-cache-agent-"));
  roots.push(root);
  const agentDir = join(root, "agent");
  mkdirSync(join(agentDir, ".assembly-line"), { recursive: true });
  writeFileSync(join(root, "package.json"), JSON.stringify({ name: "p", private: true }));
  const host = join(root, "node_modules/@assemblyline-agents/node");
  mkdirSync(join(host, "bin"), { recursive: true });
  writeFileSync(join(host, "package.json"), JSON.stringify({ name: "@assemblyline-agents/node", version: "0.1.0" }));
  writeFileSync(join(host, "bin/assembly-line.js"), REAL_CLI);
  const source = Buffer.from("export default {};\n");
  writeFileSync(join(agentDir, "agent.ts"), source);
  writeFileSync(
    join(agentDir, ".assembly-line/manifest.json"),
    JSON.stringify({ agentRevision: "rev_0001", sourceRoot: "..", agent: { id: "a" }, sources: [{ file: "agent.ts", hash: sourceFileHash(source) }] }),
  );
  return { root, artifactRoot: join(agentDir, ".assembly-line") };
}

/** Replace a cached copy with one whose CLI is someone else's. */
function plantCopy(copyDir: string, cli: string): void {
  rmSync(copyDir, { recursive: true });
  mkdirSync(join(copyDir, "node_modules/@assemblyline-agents/node/bin"), { recursive: true });
  writeFileSync(join(copyDir, cli), "// planted by another user\n");
}

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

  it("keeps its copies by default in a folder of this user's own in the temp folder, created readable by them alone", async () => {
    const { root, artifactRoot } = handBuiltAgent();
    const temp = cacheDir();
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = temp;
    try {
      const bundle = await stageDeployBundle({ artifactRoot, outDir: join(root, "out") });
      const cache = join(temp, `assembly-line-deploy-modules-${process.getuid!()}`);
      expect(bundle.modules.dir).toBe(join(cache, bundle.modules.digest));
      expect(lstatSync(cache).mode & 0o777).toBe(0o700);
      expect(readFileSync(join(bundle.modules.dir, bundle.cli), "utf8")).toBe(REAL_CLI);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  });

  it("refuses a cache folder others can write to or that is a symbolic link, before the bundle folder is cleared", async () => {
    const { root, artifactRoot } = handBuiltAgent();
    const earlier = join(root, "out");
    await stageDeployBundle({ artifactRoot, outDir: earlier, modulesCache: cacheDir() });
    const shared = cacheDir();
    chmodSync(shared, 0o777);
    const link = join(cacheDir(), "cache");
    symlinkSync(cacheDir(), link);
    for (const [modulesCache, why] of [
      [shared, "can be written by users other than its owner (mode 777)"],
      [link, "is a symbolic link"],
    ] as const) {
      const refusal = await stageDeployBundle({ artifactRoot, outDir: earlier, modulesCache }).catch((error: unknown) => error);
      expect(refusal).toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining(`the deploy package cache ${modulesCache} ${why}`) });
      expect((refusal as { fix?: string }).fix).toContain(`Remove ${modulesCache}`);
    }
    expect(readdirSync(join(earlier, "agent"))).toContain("agent.ts");
  });

  it.runIf(asRoot)("refuses a cache folder another user owns, as the default one in the shared temp folder would be if they made it first", async () => {
    const { root, artifactRoot } = handBuiltAgent();
    const temp = cacheDir();
    const planted = join(temp, `assembly-line-deploy-modules-${process.getuid!()}`);
    mkdirSync(planted, { mode: 0o700 });
    chownSync(planted, OTHER_USER, OTHER_USER);
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = temp;
    try {
      const refusal = await stageDeployBundle({ artifactRoot, outDir: join(root, "out") }).catch((error: unknown) => error);
      expect(refusal).toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining(`the deploy package cache ${planted} is owned by another user (uid ${OTHER_USER}`) });
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  });

  it("copies the packages again rather than ship a copy under their digest that others can write to or another user owns", async () => {
    const { root, artifactRoot } = handBuiltAgent();
    const cache = cacheDir();
    const first = await stageDeployBundle({ artifactRoot, outDir: join(root, "out-1"), modulesCache: cache });
    expect(lstatSync(first.modules.dir).mode & 0o777).toBe(0o700);
    const swaps: Array<(copyDir: string) => void> = [(copyDir) => chmodSync(copyDir, 0o777)];
    if (asRoot) swaps.push((copyDir) => chownSync(copyDir, OTHER_USER, OTHER_USER));
    for (const [n, swap] of swaps.entries()) {
      plantCopy(first.modules.dir, first.cli);
      swap(first.modules.dir);
      const again = await stageDeployBundle({ artifactRoot, outDir: join(root, `out-${n + 2}`), modulesCache: cache });
      expect(again.modules.dir).toBe(first.modules.dir);
      expect(readFileSync(join(again.modules.dir, again.cli), "utf8")).toBe(REAL_CLI);
    }
  });
});
