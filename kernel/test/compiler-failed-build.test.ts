import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildAgent, loadRuntimeBundle } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource, writeFiles } from "./support/agent-folder.js";

describe("what a failed build leaves behind", () => {
  it("keeps the previous manifest when the build fails while keeping its revision copy", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource() });
    const first = await buildAgent(dir);
    const before = readFileSync(first.manifestPath, "utf8");
    // The revision copies cannot be written: a file stands where their folder goes.
    rmSync(join(first.artifactRoot, "revisions"), { recursive: true, force: true });
    writeFileSync(join(first.artifactRoot, "revisions"), "not a folder");
    writeFiles(dir, { "tools/echo.ts": toolSource({ execute: "return { changed: true };" }) });
    await expect(buildAgent(dir)).rejects.toThrow();
    // A host reading the artifact sees the old build, which it refuses as stale, never the new manifest without its copy.
    expect(readFileSync(first.manifestPath, "utf8")).toBe(before);
    await expect(loadRuntimeBundle(first.artifactRoot)).rejects.toThrow(/AL_ERR_MANIFEST_STALE: tools\/echo\.ts changed/);
  });

  it("refuses to load a build when a file was added to the folder after it, naming the file", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource() });
    const { artifactRoot } = await buildAgent(dir);
    // A new tool that does not build: the failed build leaves the previous manifest, which lacks it.
    writeFiles(dir, { "tools/broken.ts": "export default 1;\n" });
    await expect(buildAgent(dir)).rejects.toThrow(/AL_ERR_TOOL_DEFINITION: tools\/broken\.ts/);
    const error = await loadRuntimeBundle(artifactRoot).then(
      () => undefined,
      (caught: Error & { code?: string }) => caught,
    );
    expect(error?.code).toBe("AL_ERR_MANIFEST_STALE");
    expect(error?.message).toMatch(/tools\/broken\.ts was added after the manifest was built/);
    expect(error?.message).toMatch(/assembly-line build/);
  });

  it("loads a build whose folder gained only files that do not change behaviour", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource() });
    const { artifactRoot, manifest } = await buildAgent(dir);
    writeFiles(dir, { "NOTES.md": "notes", "conversations/a.json": "{}" });
    await expect(loadRuntimeBundle(artifactRoot)).resolves.toMatchObject({ manifest: { agentRevision: manifest.agentRevision } });
  });
});
