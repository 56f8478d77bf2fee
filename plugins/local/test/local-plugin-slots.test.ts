import { adapter, defineGateway } from "@assemblyline-agents/core";
import { createKernel, materializeGateway } from "@assemblyline-agents/runtime";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LocalDeployTarget, LocalSandboxAdapter, LocalScheduler, localDeploy, localSandbox, localScheduler, plugin } from "../src/index.js";

const folders: string[] = [];
afterEach(async () => {
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});

describe("the local plugin's sandbox, scheduler and deploy slots", () => {
  it("materializes localSandbox(), localScheduler() and localDeploy() beside the agent", async () => {
    const agentDir = await mkdtemp(join(tmpdir(), "al-plugin-"));
    folders.push(agentDir);
    const kernel = await createKernel({ plugins: [plugin] });
    const live = await materializeGateway(
      kernel,
      defineGateway({ sandbox: localSandbox({ defaultTimeoutMs: 5_000 }), scheduler: localScheduler({ pollIntervalMs: 50 }), deploy: localDeploy() }),
      { env: {}, devMode: true, agentDir },
    );
    expect(live.sandbox).toBeInstanceOf(LocalSandboxAdapter);
    expect((live.sandbox as LocalSandboxAdapter).root).toBe(join(agentDir, ".assembly-line", "sandboxes"));
    expect(live.scheduler).toBeInstanceOf(LocalScheduler);
    expect(live.deploy).toBeInstanceOf(LocalDeployTarget);
  });

  it("resolves adapter(\"local\") for each of the three slots", async () => {
    const kernel = await createKernel({ plugins: [plugin] });
    const live = await materializeGateway(kernel, defineGateway({ sandbox: adapter("local"), scheduler: adapter("local"), deploy: adapter("local") }), {
      env: {},
      devMode: true,
    });
    expect(Object.keys(live).sort()).toEqual(["deploy", "sandbox", "scheduler"]);
  });
});
