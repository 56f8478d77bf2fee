import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { isAssemblyLineError, sourceFileHash } from "@assemblyline-agents/core";
import { afterAll, describe, expect, it } from "vitest";
import { releaseNameFromAgentId } from "../src/deploy/docker-deploy-target.js";
import { DockerDeployTarget, createDockerDeploy, dockerDeploy } from "../src/index.js";
import { baseImages, probeEngine } from "./support/engine.js";
import { recordingLogger } from "./support/recording-logger.js";

const REPO = resolve(import.meta.dirname, "../../..");
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** Image names the engine refuses: separators at either end, two in a row (but "__" and dashes), upper case, over 63 characters (the hostname's limit). */
const REFUSED = ["my-agent-", "my..agent", "agent.", "-agent", "_agent", "my._agent", "my___agent", "my.-agent", "My-Agent", "a".repeat(64)];
const ACCEPTED = ["my-agent", "my.agent", "my_agent", "my__agent", "my---agent", "a1.b2_c3-d4", "a".repeat(63)];

function constructorRefuses(name: string): unknown {
  try {
    createDockerDeploy(dockerDeploy({ name }));
    return undefined;
  } catch (caught) {
    return caught;
  }
}

/** A built agent (manifest by hand) whose project holds only an installed @assemblyline-agents/node: stages in milliseconds. */
function handBuiltAgent(agentId: string): string {
  const root = mkdtempSync(join(tmpdir(), "al-docker-names-"));
  roots.push(root);
  const agentDir = join(root, "agent");
  mkdirSync(join(agentDir, ".assembly-line"), { recursive: true });
  writeFileSync(join(root, "package.json"), JSON.stringify({ name: "p", private: true }));
  const host = join(root, "node_modules/@assemblyline-agents/node");
  mkdirSync(join(host, "bin"), { recursive: true });
  writeFileSync(join(host, "package.json"), JSON.stringify({ name: "@assemblyline-agents/node", version: "0.1.0" }));
  writeFileSync(join(host, "bin/assembly-line.js"), "// the CLI\n");
  const source = Buffer.from("export default {};\n");
  writeFileSync(join(agentDir, "agent.ts"), source);
  writeFileSync(
    join(agentDir, ".assembly-line/manifest.json"),
    JSON.stringify({ agentRevision: "rev_0001", sourceRoot: "..", agent: { id: agentId }, sources: [{ file: "agent.ts", hash: sourceFileHash(source) }] }),
  );
  return join(agentDir, ".assembly-line");
}

describe("docker deploy names", () => {
  it("refuses a name the engine would refuse as an image name (or that is no hostname), naming the rule; takes the rest", () => {
    for (const name of REFUSED) {
      const refusal = constructorRefuses(name);
      expect(isAssemblyLineError(refusal, "AL_ERR_DEPLOY_CONFIG"), `${name}: ${String(refusal)}`).toBe(true);
      expect(String(refusal)).toContain(`dockerDeploy name ${JSON.stringify(name)} is not an image name the Docker engine takes that is also a hostname`);
    }
    for (const name of ACCEPTED) expect(constructorRefuses(name), name).toBeUndefined();
  });

  it("derives the default from the agent id as before when the engine takes that, else with runs of other characters as one dash, trimmed, at most 63 characters", () => {
    // Kept as earlier versions derived them: their images, containers and state volume keep their names.
    expect(releaseNameFromAgentId("support-bot")).toBe("support-bot");
    expect(releaseNameFromAgentId("Support.Bot")).toBe("support.bot");
    expect(releaseNameFromAgentId("support bot")).toBe("support-bot");
    // These once built an image and then failed with "invalid reference format".
    expect(releaseNameFromAgentId("Support Bot!")).toBe("support-bot");
    expect(releaseNameFromAgentId("my..agent")).toBe("my-agent");
    expect(releaseNameFromAgentId("agent.")).toBe("agent");
    expect(releaseNameFromAgentId(`${"a".repeat(62)}.bc`)).toBe("a".repeat(62));
    expect(releaseNameFromAgentId("!!!")).toBeUndefined();
  });

  it("refuses an agent id that gives no name before staging anything, asking for --name", async () => {
    const target = new DockerDeployTarget({ socketPath: join(tmpdir(), "no-engine-here.sock") });
    const refusal = await target.deploy({ artifactRoot: handBuiltAgent("!!!"), env: {} }).catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: "AL_ERR_DEPLOY_CONFIG", message: expect.stringContaining('agent id "!!!" gives no docker release name') });
    expect((refusal as { fix?: string }).fix).toContain("--name");
  });

  it("reports an engine it cannot reach during a deploy as a failed deploy step (AL_ERR_DEPLOY_TRANSPORT), with the engine's fix", async () => {
    const target = new DockerDeployTarget({ name: "names-test", socketPath: join(tmpdir(), "no-engine-here.sock") });
    const refusal = await target.deploy({ artifactRoot: handBuiltAgent("names-test"), env: {} }).catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: "AL_ERR_DEPLOY_TRANSPORT", message: expect.stringContaining("the docker deploy stopped: Docker engine inspecting image") });
    expect((refusal as { fix?: string }).fix).toContain("Start the Docker engine");
  });
});

const probe = await probeEngine("docker deploy names");

describe.runIf(probe.available)("docker deploy names, against the engine", () => {
  const docker = (probe as { docker: import("dockerode") }).docker;

  it("refuses exactly the names the engine refuses as an image repository", async () => {
    const images = await baseImages(docker);
    for (const name of [...REFUSED.filter((refused) => refused.length <= 63), ...ACCEPTED]) {
      const engine = await docker
        .getImage(images.busybox)
        .tag({ repo: name, tag: "names-test" })
        .then(
          () => "accepted",
          () => "refused",
        );
      if (engine === "accepted") await docker.getImage(`${name}:names-test`).remove().catch(() => undefined);
      expect({ name, engine }).toEqual({ name, engine: constructorRefuses(name) === undefined ? "accepted" : "refused" });
    }
  });

  it("deploys an agent whose id ends in a symbol under the derived name, not failing on the image name after the build", async () => {
    const root = mkdtempSync(join(tmpdir(), "al-docker-names-"));
    roots.push(root);
    const agentDir = join(root, "agent");
    mkdirSync(join(agentDir, "conversations"), { recursive: true });
    writeFileSync(join(agentDir, "package.json"), JSON.stringify({ name: "names-agent", private: true, type: "module" }));
    writeFileSync(join(agentDir, "conversations/hello.json"), JSON.stringify({ turns: [{ text: "hi" }] }));
    symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"));
    writeFileSync(
      join(agentDir, "agent.ts"),
      `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "Support Bot!", model: "scripted:conversations/hello.json", instructions: "hi" });\n`,
    );
    const built = spawnSync(process.execPath, [join(REPO, "plugins/node/bin/assembly-line.js"), "build", agentDir], { encoding: "utf8" });
    expect(built.status, built.stderr + built.stdout).toBe(0);
    const images = await baseImages(docker);
    const target = new DockerDeployTarget({ baseImage: images.node, network: "host", include: ["conversations"], readyTimeoutMs: 1 }, docker, recordingLogger());
    // readyTimeoutMs 1: the release is built and started, then given up on; its image goes with it.
    const refusal = await target.deploy({ artifactRoot: join(agentDir, ".assembly-line"), env: {} }).catch((error: unknown) => error as Error & { code?: string });
    expect(refusal).toMatchObject({ code: "AL_ERR_DEPLOY_UNHEALTHY", message: expect.stringMatching(/^AL_ERR_DEPLOY_UNHEALTHY: release support-bot-[0-9a-f]{8} \(support-bot:/) });
  }, 600_000);
});
