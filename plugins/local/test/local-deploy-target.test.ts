import { isAssemblyLineError } from "@assemblyline-agents/core";
import { buildAgent, loadRuntimeBundle } from "@assemblyline-agents/runtime";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { LocalDeployTarget } from "../src/index.js";

const folders: string[] = [];
afterEach(async () => {
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});

/** A built agent folder whose sources import nothing, so it loads from anywhere. */
async function builtAgent(): Promise<{ agentDir: string; artifactRoot: string; revision: string }> {
  const agentDir = await mkdtemp(join(tmpdir(), "al-deploy-"));
  folders.push(agentDir);
  const brand = '$$type: "assembly-line.agent", $$version: 1';
  await writeFile(join(agentDir, "agent.ts"), `export default { ${brand}, model: "scripted:none", instructions: "Take notes." };\n`);
  await mkdir(join(agentDir, "skills", "notes"), { recursive: true });
  await writeFile(join(agentDir, "skills", "notes", "SKILL.md"), "---\r\ndescription: Notes.\r\n---\r\n# Notes\r\nWrite things down.\r\n");
  await writeFile(join(agentDir, "README.md"), "not behaviour");
  const { manifest, artifactRoot } = await buildAgent(agentDir);
  return { agentDir, artifactRoot, revision: manifest.agentRevision };
}

describe("LocalDeployTarget", () => {
  it("copies the manifest and its sources into a folder named after the revision", async () => {
    const { agentDir, artifactRoot, revision } = await builtAgent();
    const deployed = await new LocalDeployTarget().deploy({ artifactRoot, env: {} });
    expect(deployed.id).toBe(revision);
    const target = join(agentDir, ".assembly-line-deployments", revision);
    expect(fileURLToPath(deployed.url!)).toBe(target);
    expect((await readdir(target, { recursive: true })).map(String).sort()).toEqual([
      ".assembly-line",
      ".assembly-line/manifest.json",
      "agent.ts",
      "skills",
      "skills/notes",
      "skills/notes/SKILL.md",
    ]);
    // Bytes are copied untouched, CRLF included.
    expect(await readFile(join(target, "skills/notes/SKILL.md"), "utf8")).toBe("---\r\ndescription: Notes.\r\n---\r\n# Notes\r\nWrite things down.\r\n");
    expect(await readFile(join(agentDir, ".assembly-line-deployments", "CURRENT"), "utf8")).toBe(`${revision}\n`);
    // The deployment is itself a loadable artifact.
    const bundle = await loadRuntimeBundle(join(target, ".assembly-line"));
    expect(bundle.manifest.agentRevision).toBe(revision);
    expect(bundle.sourceBundle.agent.instructions).toBe("Take notes.");
  });

  it("reuses the folder when the same revision is deployed again", async () => {
    const { artifactRoot } = await builtAgent();
    const target = new LocalDeployTarget();
    const [first, second] = await Promise.all([target.deploy({ artifactRoot, env: {} }), target.deploy({ artifactRoot, env: {} })]);
    expect(second).toEqual(first);
    const entries = await readdir(join(artifactRoot, "..", ".assembly-line-deployments"));
    expect(entries.sort()).toEqual(["CURRENT", first.id]);
  });

  it("deploys into a chosen directory", async () => {
    const { artifactRoot, revision } = await builtAgent();
    const directory = join(artifactRoot, "..", "elsewhere");
    await new LocalDeployTarget({ directory }).deploy({ artifactRoot, env: {} });
    expect(existsSync(join(directory, revision, "agent.ts"))).toBe(true);
  });

  it("refuses an artifact without a manifest", async () => {
    const empty = await mkdtemp(join(tmpdir(), "al-deploy-empty-"));
    folders.push(empty);
    const error = await new LocalDeployTarget().deploy({ artifactRoot: empty, env: {} }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_MANIFEST_MISSING")).toBe(true);
  });

  it("refuses sources edited after the build, leaving no partial deployment", async () => {
    const { agentDir, artifactRoot } = await builtAgent();
    await writeFile(join(agentDir, "agent.ts"), "export default {};\n");
    const error = await new LocalDeployTarget().deploy({ artifactRoot, env: {} }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_MANIFEST_STALE")).toBe(true);
    expect((error as Error).message).toContain("agent.ts");
    const deployments = join(agentDir, ".assembly-line-deployments");
    expect(existsSync(deployments) ? await readdir(deployments) : []).toEqual([]);
  });
});
