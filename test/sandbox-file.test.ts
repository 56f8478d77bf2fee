import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { LABELS } from "@assemblyline-agents/docker";
import { buildAgent } from "@assemblyline-agents/runtime";
import { checkSandboxAdapterInstalled } from "@assemblyline-agents/registry";
import { openLocalRuntime } from "../plugins/node/src/cli/local-runtime.js";
import { baseImages, probeEngine } from "../plugins/docker/test/support/engine.js";
import { copyExample } from "./support/example-copy.js";

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** An agent folder (resolving the workspace's packages) with only agent.ts, sandbox.ts and a script. */
function agentWithSandbox(sandboxSource: string): { agentDir: string; script: string } {
  const { agentDir, root } = copyExample();
  roots.push(root);
  rmSync(join(agentDir, "gateway.ts"));
  writeFileSync(join(agentDir, "sandbox.ts"), sandboxSource);
  const script = join(agentDir, "conversations/shell.json");
  mkdirSync(join(agentDir, "conversations"), { recursive: true });
  writeFileSync(script, JSON.stringify({ turns: [{ toolCalls: [{ name: "bash", input: { command: "hostname; cat /etc/assembly-line-test-image" } }] }, { text: "done" }] }));
  return { agentDir, script };
}

describe("sandbox.ts adapter resolution", () => {
  it("fails the build when no installed package provides the adapter, naming it", async () => {
    const { agentDir } = agentWithSandbox(`import { defineSandbox } from "@assemblyline-agents/core";\nexport default defineSandbox({ adapter: "acme-vm", image: "node:22" });\n`);
    const error = await buildAgent(agentDir, { checkSandboxAdapter: checkSandboxAdapterInstalled }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ADAPTER_NOT_INSTALLED"), String(error)).toBe(true);
    expect(String(error)).toMatch(/"acme-vm" sandbox/);
  });

  it("fails the build for a modal sandbox, saying no Modal adapter exists yet and naming the alternatives", async () => {
    const { agentDir } = agentWithSandbox(`import { defineSandbox } from "@assemblyline-agents/core";\nexport default defineSandbox({ adapter: "modal", image: "node:22" });\n`);
    const error = await buildAgent(agentDir, { checkSandboxAdapter: checkSandboxAdapterInstalled }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ADAPTER_NOT_INSTALLED"), String(error)).toBe(true);
    expect(String(error)).toMatch(/no Modal adapter exists yet/);
    expect(String(error)).toMatch(/"daytona".*"e2b".*"docker"/);
  });

  it("resolves sandbox.ts's daytona and e2b spellings to their installed packages", async () => {
    const { agentDir } = agentWithSandbox(`import { defineSandbox } from "@assemblyline-agents/core";\nexport default defineSandbox({ adapter: "daytona", image: "node:22" });\n`);
    await checkSandboxAdapterInstalled("daytona", agentDir);
    await checkSandboxAdapterInstalled("e2b", agentDir);
    const { manifest } = await buildAgent(agentDir, { checkSandboxAdapter: checkSandboxAdapterInstalled });
    expect(manifest.sandbox).toMatchObject({ adapter: "daytona", image: "node:22" });
  });
});

const probe = await probeEngine("sandbox.ts with the docker adapter");
if (probe.available) {
  const { docker } = probe;
  let image: string;
  beforeAll(async () => {
    image = (await baseImages(docker)).busybox;
  }, 120_000);

  describe("sandbox.ts choosing docker", () => {
    it.each([
      ["dockerSandbox({...})", (ref: string) => `import { dockerSandbox } from "@assemblyline-agents/docker";\nexport default dockerSandbox({ image: ${JSON.stringify(ref)}, network: "none" });\n`],
      ['defineSandbox({ adapter: "docker" })', (ref: string) => `import { defineSandbox } from "@assemblyline-agents/core";\nexport default defineSandbox({ adapter: "docker", image: ${JSON.stringify(ref)}, network: "none" });\n`],
    ])("runs bash in a container when sandbox.ts default-exports %s and there is no gateway.ts", async (_, source) => {
      const { agentDir, script } = agentWithSandbox(source(image));
      const local = await openLocalRuntime({ agentDir, build: true });
      let runId = "";
      try {
        expect(local.bundle.manifest.sandbox).toMatchObject({ adapter: "docker", image, options: { network: "none" } });
        const result = await local.runtime.run({ message: "go", model: `scripted:${script}` });
        expect(result.status).toBe("completed");
        runId = result.runId;
        const calls = await local.runtime.state.runs.listToolCalls(result.runId);
        const [name, marker] = ((calls[0]?.output as { stdout: string }).stdout ?? "").trim().split("\n");
        expect(name).not.toBe(hostname());
        expect(marker).toBe("assembly-line test image: busybox");
      } finally {
        await local.close();
      }
      // runtime.run returns after the release at the run's end.
      expect(await docker.listContainers({ all: true, filters: { label: [`${LABELS.key}=${runId}`] } })).toHaveLength(0);
    }, 120_000);
  });
}
