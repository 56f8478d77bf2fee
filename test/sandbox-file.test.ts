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
import { startFakeDaytona } from "../plugins/daytona/test/support/fake-daytona.js";
import { startFakeE2b } from "../plugins/e2b/test/support/fake-e2b.js";
import { e2bTemplateImage } from "../plugins/e2b/test/support/template-image.js";
import { startFakeModal } from "../plugins/modal/test/support/fake-modal.js";
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

  it("resolves sandbox.ts's daytona, e2b and modal spellings to their installed packages (the spec's Daytona example builds)", async () => {
    const { agentDir } = agentWithSandbox(
      `import { defineSandbox } from "@assemblyline-agents/core";\nexport default defineSandbox({ adapter: "daytona", image: "node:22", snapshot: { mode: "manual", retainLast: 3, reason: "operator-requested checkpoint" } });\n`,
    );
    await checkSandboxAdapterInstalled("daytona", agentDir);
    await checkSandboxAdapterInstalled("e2b", agentDir);
    await checkSandboxAdapterInstalled("modal", agentDir);
    const { manifest } = await buildAgent(agentDir, { checkSandboxAdapter: checkSandboxAdapterInstalled });
    expect(manifest.sandbox).toMatchObject({ adapter: "daytona", image: "node:22" });
    expect(JSON.stringify(manifest.sandbox)).toContain("operator-requested checkpoint");
  });
});

describe("sandbox.ts choosing the local sandbox", () => {
  /** The script runs one bash call: `command`. */
  function localAgent(sandboxSource: string, command: string): { agentDir: string; script: string } {
    const made = agentWithSandbox(sandboxSource);
    writeFileSync(made.script, JSON.stringify({ turns: [{ toolCalls: [{ name: "bash", input: { command } }] }, { text: "done" }] }));
    return made;
  }

  it("applies localSandbox()'s own options (they were dropped)", async () => {
    const { agentDir, script } = localAgent(`import { localSandbox } from "@assemblyline-agents/local";\nexport default localSandbox({ env: { GREETING: "from sandbox.ts" } });\n`, 'echo "$GREETING"');
    const local = await openLocalRuntime({ agentDir, build: true, checkAgentModel: false });
    try {
      const result = await local.runtime.run({ message: "go", model: `scripted:${script}` });
      expect(result.status).toBe("completed");
      const output = (await local.runtime.state.runs.listToolCalls(result.runId))[0]?.output as { stdout: string };
      expect(output.stdout).toBe("from sandbox.ts\n");
    } finally {
      await local.close();
    }
  }, 60_000);

  it("times bash out at the sandbox's defaultTimeoutMs when the model gives no timeoutMs", async () => {
    const { agentDir, script } = localAgent(`import { localSandbox } from "@assemblyline-agents/local";\nexport default localSandbox({ defaultTimeoutMs: 300 });\n`, "sleep 5; echo late");
    const local = await openLocalRuntime({ agentDir, build: true, checkAgentModel: false });
    try {
      const started = Date.now();
      const result = await local.runtime.run({ message: "go", model: `scripted:${script}` });
      expect(result.status).toBe("completed");
      const output = (await local.runtime.state.runs.listToolCalls(result.runId))[0]?.output as { stdout: string; timedOut: boolean };
      expect(output).toMatchObject({ stdout: "", timedOut: true });
      expect(Date.now() - started).toBeLessThan(4_000);
    } finally {
      await local.close();
    }
  }, 60_000);

  it("takes the spec's local example (its image unused), and refuses an option the local sandbox does not have", async () => {
    const spec = localAgent(`import { defineSandbox } from "@assemblyline-agents/core";\nexport default defineSandbox({ adapter: "local", image: "node:22", workingDirectory: "/workspace" });\n`, "echo ok");
    const local = await openLocalRuntime({ agentDir: spec.agentDir, build: true, checkAgentModel: false });
    await local.close();
    const { agentDir } = localAgent(`import { localSandbox } from "@assemblyline-agents/local";\nexport default localSandbox({ defaultTimeout: 5000 } as never);\n`, "echo ok");
    const error = await openLocalRuntime({ agentDir, build: true, checkAgentModel: false }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
    expect(String(error)).toContain('LocalSandboxAdapter option "defaultTimeout" unknown');
  }, 60_000);
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

  describe("sandbox.ts choosing a hosted sandbox", () => {
    /** Sets the variables for the test and hands back what undoes it. */
    const withEnv = (values: Record<string, string>) => {
      const saved = Object.fromEntries(Object.keys(values).map((name) => [name, process.env[name]]));
      Object.assign(process.env, values);
      return () => {
        for (const [name, value] of Object.entries(saved)) {
          if (value === undefined) delete process.env[name];
          else process.env[name] = value;
        }
      };
    };

    it.each([
      [
        "daytona",
        async () => {
          const fake = await startFakeDaytona({ docker, image });
          return { fake, env: { DAYTONA_API_KEY: fake.apiKey, DAYTONA_API_URL: fake.apiUrl }, alive: () => fake.sandboxes.size };
        },
      ],
      [
        "e2b",
        async () => {
          const fake = await startFakeE2b({ docker, templates: { base: await e2bTemplateImage(docker, image) } });
          return { fake, env: { E2B_API_KEY: fake.apiKey, E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl }, alive: () => fake.sandboxes.size };
        },
      ],
      [
        "modal",
        async () => {
          const fake = await startFakeModal({ docker, images: { "debian:bookworm-slim": image } });
          const alive = () => [...fake.sandboxes.values()].filter((sandbox) => sandbox.state === "running").length;
          return { fake, env: { MODAL_TOKEN_ID: fake.tokenId, MODAL_TOKEN_SECRET: fake.tokenSecret, MODAL_SERVER_URL: fake.serverUrl }, alive };
        },
      ],
    ] as const)("runs bash in the %s sandbox that sandbox.ts's defineSandbox({ adapter }) names", async (adapter, start) => {
      const { fake, env, alive } = await start();
      const restore = withEnv(env);
      const { agentDir, script } = agentWithSandbox(`import { defineSandbox } from "@assemblyline-agents/core";\nexport default defineSandbox({ adapter: ${JSON.stringify(adapter)}, network: "none" });\n`);
      try {
        const local = await openLocalRuntime({ agentDir, build: true });
        try {
          expect(local.bundle.manifest.sandbox).toMatchObject({ adapter });
          const result = await local.runtime.run({ message: "go", model: `scripted:${script}` });
          expect(result.status).toBe("completed");
          const calls = await local.runtime.state.runs.listToolCalls(result.runId);
          const [name, marker] = ((calls[0]?.output as { stdout: string }).stdout ?? "").trim().split("\n");
          expect(name).not.toBe(hostname());
          expect(marker).toBe("assembly-line test image: busybox");
        } finally {
          await local.close();
        }
        // The run's end released (deleted) its hosted sandbox.
        expect(alive()).toBe(0);
      } finally {
        restore();
        await fake.close();
      }
    }, 120_000);
  });
}
