import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sourceFileHash } from "@assemblyline-agents/core";
import { buildAgent, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime, scriptedHarness } from "@assemblyline-agents/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

/** Enough imported files that copying them takes long enough for builds started together to overlap. */
const PARTS = 40;
const parts = Object.fromEntries(Array.from({ length: PARTS }, (_, i) => [`lib/part${i}.ts`, `export const part${i} = ${i};\n`]));
const partsIndex = Array.from({ length: PARTS }, (_, i) => `export { part${i} } from "./part${i}.js";`).join("\n") + "\n";

const publishTool = (version: string) =>
  toolSource({
    upFront: true,
    imports: `import * as parts from "../lib/index.js";`,
    extra: `needsApproval: approvalRequired("Publishing is visible."),`,
    execute: `return { published: input.value, parts: Object.keys(parts).length, by: "${version}" };`,
  });

const script = { turns: [{ toolCalls: [{ name: "publish", input: { value: "milk" } }] }, { text: "done" }] };

const opened: OpenEveRuntime[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((runtime) => runtime.close()));
});

async function host(dir: string, state: InMemoryStateAdapter) {
  const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  const runtime = new OpenEveRuntime({ ...bundle, state, agentHarness: scriptedHarness(script), logger: noopLogger() });
  opened.push(runtime);
  return runtime;
}

const agentFiles = () => agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/publish.ts": publishTool("v1"), "lib/index.ts": partsIndex, ...parts });

/** The files of the kept copy at `root` that are missing or differ from what its manifest lists. */
function missingFromCopy(root: string): string[] {
  const manifest = JSON.parse(readFileSync(join(root, "manifest.json"), "utf8")) as { sources: Array<{ file: string; hash: string }> };
  return manifest.sources
    .filter((source) => {
      const copied = join(root, "src", source.file);
      return !existsSync(copied) || sourceFileHash(readFileSync(copied)) !== source.hash;
    })
    .map((source) => source.file);
}

describe("builds of one folder at the same time", () => {
  it("all succeed and leave a whole copy of the revision, whichever of them writes it", async () => {
    const dir = agentFiles();
    const { manifest, artifactRoot } = await buildAgent(dir);
    expect(manifest.sources.length).toBeGreaterThan(PARTS);
    const kept = join(artifactRoot, "revisions", manifest.agentRevision);
    for (let round = 0; round < 4; round++) {
      rmSync(kept, { recursive: true, force: true });
      const builds = await Promise.allSettled([buildAgent(dir), buildAgent(dir), buildAgent(dir)]);
      expect(builds.filter((build) => build.status === "rejected"), `round ${round}`).toEqual([]);
      expect(missingFromCopy(kept), `round ${round}`).toEqual([]);
    }
    // Nothing staged is left behind by the builds that found the copy already made.
    expect(readdirSync(join(artifactRoot, "revisions"))).toEqual([manifest.agentRevision]);
  });

  it("replaces a kept copy that lost files with a whole one, keeps the runs that hold it, and a run paused under it is approved on it", async () => {
    const dir = agentFiles();
    const state = new InMemoryStateAdapter();
    const first = await host(dir, state);
    const paused = await first.run({ message: "publish milk" });
    expect(paused.status).toBe("waiting_approval");
    const revision = first.manifest.agentRevision;
    const kept = join(dir, ".assembly-line", "revisions", revision);
    // A prune holds the copy for the paused run, as it would for a run of another state store.
    await first.pruneRevisions();
    const holds = readdirSync(join(kept, "held-by"));
    expect(holds).toHaveLength(1);
    // As a build that lost part of its copy to another one left it: manifest in place, files gone.
    for (let i = 0; i < PARTS; i += 3) rmSync(join(kept, "src", "lib", `part${i}.ts`));

    writeFileSync(join(dir, "tools/publish.ts"), publishTool("v2"));
    await host(dir, state);
    writeFileSync(join(dir, "tools/publish.ts"), publishTool("v1"));
    const reverted = await host(dir, state);
    expect(reverted.manifest.agentRevision).toBe(revision);
    expect(missingFromCopy(kept)).toEqual([]);
    expect(readdirSync(join(kept, "held-by"))).toEqual(holds);

    writeFileSync(join(dir, "tools/publish.ts"), publishTool("v2"));
    const current = await host(dir, state);
    expect(current.manifest.agentRevision).not.toBe(revision);
    expect((await current.approve(paused.runId)).status).toBe("completed");
    const completed = (await current.listEvents(paused.runId)).find((event) => event.type === "tool.completed")?.data as { output?: unknown } | undefined;
    expect(completed?.output).toEqual({ published: "milk", parts: PARTS, by: "v1" });
  });
});
