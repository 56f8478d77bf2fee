import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stageDeployBundle } from "@assemblyline-agents/core/deploy";
import { buildAgent } from "@assemblyline-agents/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { copyExample } from "./support/example-copy.js";

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function tempRoot(): string {
  const root = mkdtempSync(join(tmpdir(), "al-bundle-folder-"));
  roots.push(root);
  return root;
}

/** A built agent with no sources: enough for stageDeployBundle to reach its folder checks. */
function builtAgent(dir: string, options: { gitignore?: boolean } = {}): string {
  mkdirSync(join(dir, ".assembly-line"), { recursive: true });
  writeFileSync(join(dir, ".assembly-line", "manifest.json"), JSON.stringify({ agentRevision: "rev_1", sourceRoot: "..", agent: { id: "sales" }, sources: [] }));
  if (options.gitignore) writeFileSync(join(dir, ".assembly-line", ".gitignore"), "*\n");
  return join(dir, ".assembly-line");
}

describe("stageDeployBundle's folder (deploy --out)", () => {
  it("refuses a project folder holding another built agent named agent/, and leaves it whole", async () => {
    const root = tempRoot();
    const artifactRoot = builtAgent(join(root, "sales", "agent"));
    // `cd support && assembly-line deploy ../sales/agent --target fly --out .`
    const support = join(root, "support");
    builtAgent(join(support, "agent"));
    writeFileSync(join(support, "agent", "agent.ts"), "export default {};\n");
    writeFileSync(join(support, "README.md"), "the support team's project\n");
    await expect(stageDeployBundle({ artifactRoot, outDir: support })).rejects.toMatchObject({
      code: "AL_ERR_DEPLOY_CONFIG",
      message: expect.stringContaining(`the deploy folder ${support} holds files no deploy wrote`),
    });
    expect(readFileSync(join(support, "README.md"), "utf8")).toBe("the support team's project\n");
    expect(existsSync(join(support, "agent", "agent.ts"))).toBe(true);
  });

  it("refuses a folder of nothing but agent/ and node_modules/ when agent/ is a built agent, not a staged one", async () => {
    const root = tempRoot();
    const artifactRoot = builtAgent(join(root, "sales", "agent"));
    // A built agent's .assembly-line holds the build's .gitignore; its sources are files no staged manifest lists.
    const built = join(root, "built");
    builtAgent(join(built, "agent"), { gitignore: true });
    mkdirSync(join(built, "node_modules"));
    const sources = join(root, "sources");
    builtAgent(join(sources, "agent"));
    writeFileSync(join(sources, "agent", "agent.ts"), "export default {};\n");
    for (const outDir of [built, sources]) {
      await expect(stageDeployBundle({ artifactRoot, outDir })).rejects.toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining("holds files no deploy wrote") });
    }
    expect(existsSync(join(built, "agent", ".assembly-line", ".gitignore"))).toBe(true);
    expect(existsSync(join(sources, "agent", "agent.ts"))).toBe(true);
  });

  it("replaces a bundle written before the mark, and deletes nothing when a later check refuses", async () => {
    const { agentDir, root } = copyExample();
    roots.push(root);
    const { artifactRoot } = await buildAgent(agentDir);
    const out = join(root, "out");
    await stageDeployBundle({ artifactRoot, outDir: out });
    // As an earlier version left it: no mark.
    rmSync(join(out, ".assembly-line-bundle"));
    writeFileSync(join(out, "fly.toml"), 'app = "sales"\n');
    await stageDeployBundle({ artifactRoot, outDir: out });
    expect(existsSync(join(out, ".assembly-line-bundle"))).toBe(true);
    expect(existsSync(join(out, "fly.toml"))).toBe(false);

    // An include the agent folder lacks, then a source changed since the build: refused, the bundle left as it was.
    writeFileSync(join(out, "fly.toml"), 'app = "sales"\n');
    await expect(stageDeployBundle({ artifactRoot, outDir: out, include: ["no-such-folder"] })).rejects.toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining('include "no-such-folder" (--include) names nothing') });
    writeFileSync(join(agentDir, "agent.ts"), `${readFileSync(join(agentDir, "agent.ts"), "utf8")}\n// changed\n`);
    await expect(stageDeployBundle({ artifactRoot, outDir: out })).rejects.toMatchObject({ code: "AL_ERR_MANIFEST_STALE" });
    expect(existsSync(join(out, "fly.toml"))).toBe(true);
    expect(existsSync(join(out, "agent", ".assembly-line", "manifest.json"))).toBe(true);
  }, 600_000);
});

describe("stageDeployBundle include", () => {
  it("refuses a symbolic link in an included folder that leads outside the agent folder, naming it", async () => {
    const root = tempRoot();
    const agentDir = join(root, "agent");
    const artifactRoot = builtAgent(agentDir);
    mkdirSync(join(root, "secrets"));
    writeFileSync(join(root, "secrets", "id_ed25519"), "PRIVATE KEY\n");
    mkdirSync(join(agentDir, "conversations", "more"), { recursive: true });
    writeFileSync(join(agentDir, "conversations", "hello.json"), "{}\n");
    // A link inside the agent folder is followed and shipped; one leading out of it is refused.
    symlinkSync(join(agentDir, "conversations", "hello.json"), join(agentDir, "conversations", "again.json"));
    symlinkSync(join(root, "secrets"), join(agentDir, "conversations", "more", "ssh"));
    const outDir = join(root, "out");
    await expect(stageDeployBundle({ artifactRoot, outDir, include: ["conversations"] })).rejects.toMatchObject({
      code: "AL_ERR_DEPLOY_CONFIG",
      message: expect.stringContaining(`leads outside the agent folder: ${join("conversations", "more", "ssh")} is a link to`),
    });
    expect(existsSync(outDir)).toBe(false);
  });
});
